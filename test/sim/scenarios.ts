/**
 * Named scenarios: the review's findings as scripted schedules (fixed call times and the few
 * statement delays that matter; no other fault), each the shortest story of its finding. The
 * random search finds the same findings (`seeds.ts`); these say exactly how.
 *
 * Common start: writer 0 appends four ops on the pair 11|12 (policy: compact above 4, keep 1), so
 * the next op announces a compaction to the fourth op's position (H ≈ 30 ms).
 */
import type { FindingTag, Script } from './pair-sim.js';

export interface NamedScenario {
  name: string;
  finding: FindingTag;
  /** The knob the scenario turns: what exposes the finding. */
  knob: string;
  script: Script;
}

const A = 11n;
const B = 12n;

const history: Script['writers'][number] = {
  calls: [
    { atMs: 0, method: 'follow', actor: A, other: B },
    { atMs: 10, method: 'mute', actor: A, other: B },
    { atMs: 20, method: 'unmute', actor: A, other: B },
    { atMs: 30, method: 'mute', actor: A, other: B },
  ],
};

export const NAMED_SCENARIOS: readonly NamedScenario[] = [
  {
    name: 'a slow observer read settles a compaction early and a block is lost',
    finding: 'F1-slow-observer',
    knob: "the observer's read reaches the node 900 ms after it started",
    script: {
      writers: [
        history,
        // The observer: its read starts at 100 ms and reaches the node at 1,000 ms, after the
        // announcement (750 ms): `compact_seen` = 100 ms.
        { calls: [{ atMs: 100, method: 'addCloseFriend', actor: A, other: B }] },
        // A replayed block at 5 ms, read at 700 ms (before the announcement), appended slowly:
        // it lands at ~1,655 ms and is acknowledged at ~957 ms after its read.
        { calls: [{ atMs: 700, method: 'block', actor: B, other: A, positionMs: 5 }] },
        // The announcer: the fifth op, at 750 ms.
        { calls: [{ atMs: 750, method: 'unmute', actor: A, other: B }] },
        // The committer: 1,500 ms after `compact_seen`, before the block lands.
        { calls: [{ atMs: 1_610, method: 'mute', actor: B, other: A }] },
      ],
      delays: (writer, call, statement, nth) => {
        if (writer === 1 && call === 0 && statement === 'static' && nth === 0) return { reachMs: 900 };
        if (writer === 2 && call === 0 && statement === 'append') return { reachMs: 950, backMs: 2 };
        return undefined;
      },
    },
  },
  {
    name: 'a committer whose clock runs 2 s ahead commits at once and a block is lost',
    finding: 'F2-clock-skew',
    knob: "the committer's clock is 2 s ahead of the observer's",
    script: {
      writers: [
        history,
        // The observer reads right after the announcement: `compact_seen` = 760 ms on its clock.
        { calls: [{ atMs: 760, method: 'addCloseFriend', actor: A, other: B }] },
        // A replayed block at 5 ms, read at 700 ms, landing at ~1,205 ms.
        { calls: [{ atMs: 700, method: 'block', actor: B, other: A, positionMs: 5 }] },
        { calls: [{ atMs: 750, method: 'unmute', actor: A, other: B }] },
        // The committer at 900 ms true time reads 2,900 ms on its clock: settled, it commits.
        { skewMs: 2_000, calls: [{ atMs: 900, method: 'mute', actor: B, other: A }] },
      ],
      delays: (writer, call, statement) =>
        writer === 2 && call === 0 && statement === 'append' ? { reachMs: 500, backMs: 2 } : undefined,
    },
  },
];
