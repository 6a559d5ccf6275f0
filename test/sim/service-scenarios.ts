/**
 * Named whole-service scenarios: each the shortest story of a loss the feed's design prevents, with
 * the planted fault (`FeedPlant`) that removes the prevention. Unplanted, each must hold; planted,
 * each must break the feed's invariant (`service.test.ts`).
 *
 * Statements of a follow by `Script.delays`' names: the pair reads (`static`, `ops`), the marks
 * batch with the op's intent (`marks`), the append, the view batch with the feed rows (`view`), the
 * intent's delete (`resolve`); the rest (`other`).
 */
import type { FeedPlant } from './feed-sim.js';
import type { Script } from './pair-sim.js';

export interface ServiceScenario {
  name: string;
  plant: FeedPlant;
  script: Script;
}

const A = 11n;
const B = 12n;

/** Mute/unmute toggles of A on B from `fromMs`, every `everyMs`. */
const toggles = (fromMs: number, n: number, everyMs: number): Script['writers'][number]['calls'] =>
  Array.from({ length: n }, (_, i) => ({
    atMs: fromMs + i * everyMs,
    method: i % 2 === 0 ? ('mute' as const) : ('unmute' as const),
    actor: A,
    other: B,
  }));

export const SERVICE_SCENARIOS: readonly ServiceScenario[] = [
  {
    name: "a follow's view batch lands 12 s late (503): readers must not pass its slot before it lands",
    plant: 'watermark-without-intents',
    script: {
      writers: [{ calls: [{ atMs: 0, method: 'follow', actor: A, other: B }] }],
      delays: (w, call, statement, nth) =>
        w === 0 && call === 0 && statement === 'view' && nth === 0 ? { reachMs: 12_000 } : undefined,
    },
  },
  {
    name: "a follow's append lands 15 s late (503), after the recovery found it absent: the fence keeps it out",
    plant: 'recovery-without-fence',
    script: {
      writers: [{ calls: [{ atMs: 0, method: 'follow', actor: A, other: B }] }],
      delays: (w, call, statement) =>
        w === 0 && call === 0 && statement === 'append' ? { reachMs: 15_000 } : undefined,
    },
  },
  {
    // The event window is 2L = 18 s here (S = 2 s): toggles from 19 s on no longer derive the
    // follow's row, so only the recovery can.
    name: "a writer dies after its follow's append; the recovery is down 45 s while toggles from 19 s compact the pair: the follow must stay for the recovery",
    plant: 'compaction-folds-intents',
    script: {
      writers: [
        { calls: [{ atMs: 0, method: 'follow', actor: A, other: B }] },
        { calls: toggles(19_000, 24, 500) },
      ],
      delays: (w, call, statement, nth) =>
        w === 0 && call === 0 && statement === 'view' && nth === 0 ? { crash: true } : undefined,
      recoveryDown: { fromMs: 0, toMs: 45_000 },
    },
  },
  {
    // L = 9 s. The recovery's look at 10 s passes the follow's slot (no intent yet) and saves its
    // bound; the orphan lands at 10.5 s; the reader, its clock 1.8 s behind (within S = 2 s, so
    // its clock guard lets it read), reaches the slot at 10.8 s.
    name: "a follow's marks batch times out (503) and lands 10.5 s after its slot: the orphan intent must not hold a reader whose clock runs 1.8 s behind",
    plant: 'orphan-intents-hold',
    script: {
      writers: [
        { calls: [{ atMs: 0, method: 'follow', actor: A, other: B }] },
        { calls: [{ atMs: 3_000, method: 'follow', actor: B, other: A }] },
      ],
      delays: (w, call, statement) =>
        w === 0 && call === 0 && statement === 'marks' ? { reachMs: 10_500 } : undefined,
      readerSkewMs: -1_800,
    },
  },
  {
    // L = 9 s. The append lands at 15 s; the recovery worker holding the lease reads the pair at
    // its pass after 9 s (the op absent) and pauses 25 s before it fences; the other worker takes
    // the lease after its expiry + S, finds the landed op present and rewrites the pair (the
    // follow delivered); the paused one then wakes and acts on its old read.
    name: "a follow's append lands 15 s late; the recovery's holder reads it absent, pauses 25 s past its lease, and wakes after the next holder found it present: the follow stays delivered and stored",
    plant: 'recovery-undecided',
    script: {
      writers: [{ calls: [{ atMs: 0, method: 'follow', actor: A, other: B }] }],
      delays: (w, call, statement) =>
        w === 0 && call === 0 && statement === 'append' ? { reachMs: 15_000 } : undefined,
      lease: { pause: { atMs: 9_000, forMs: 25_000 } },
    },
  },
  {
    // L = 9 s, the event window 2L = 18 s. The next write on the pair, 25 s later, derives no
    // event for a slot that old: only the recovery writes the follow's row (down until 20 s here),
    // and only the intent keeps readers below its slot until it does.
    name: "a writer dies between its follow's append and its view batch; the pair's next write comes 25 s later: the follow reaches every reader once",
    plant: 'watermark-without-intents',
    script: {
      writers: [
        { calls: [{ atMs: 0, method: 'follow', actor: A, other: B }] },
        { calls: [{ atMs: 25_000, method: 'mute', actor: A, other: B }] },
      ],
      delays: (w, call, statement, nth) =>
        w === 0 && call === 0 && statement === 'view' && nth === 0 ? { crash: true } : undefined,
      recoveryDown: { fromMs: 0, toMs: 20_000 },
    },
  },
  {
    // The first reader's clock steps 20 s ahead as it starts, at 0.3 s; the follow's intent lands
    // at ~0.95 s (within the write budget). Reading on that clock, its watermark is ~11 s ahead of
    // true time: it passes the follow's slot before the intent is there to hold it. Its clock
    // guard refuses it instead.
    name: "a reader's clock steps 20 s ahead (past S) while a follow's intent is on its way: the reader is refused, never passes the follow",
    plant: 'reader-clock-unguarded',
    script: {
      writers: [{ calls: [{ atMs: 0, method: 'follow', actor: A, other: B }] }],
      delays: (w, call, statement) =>
        w === 0 && call === 0 && statement === 'marks' ? { reachMs: 950 } : undefined,
      readerStep: { atMs: 0, byMs: 20_000 },
      readerStartMs: 300,
      // A long-poll that found nothing reads again from its cursor when its wait ends, which
      // would find the follow landed by then: the readers here page without waiting.
      readerWaits: false,
    },
  },
  {
    // L = 9 s. An account update's logged batch (its cells and its user.updated row) times out
    // and lands 12 s later: its intent holds readers below its slot until it lands (or the
    // recovery resolves it), else they pass the slot and never see the update.
    name: "an account update's batch lands 12 s late (503): readers must not pass its slot before it lands",
    plant: 'put-without-intent',
    script: {
      writers: [
        {
          calls: [
            { atMs: 0, method: 'follow', actor: A, other: B, put: { hideLists: true } },
            { atMs: 500, method: 'follow', actor: B, other: A },
          ],
        },
      ],
      delays: (w, call, statement, nth) =>
        w === 0 && call === 0 && statement === 'view' && nth === 0 ? { reachMs: 12_000 } : undefined,
    },
  },
  {
    // Two replays of A → B at one explicit position ahead of the clock (the slot is the position):
    // two feed rows whose keys differ only in the op's kind, then a follow of B → A. A reader
    // taking one event at a time, its cursor on the second row, reads from just before that row:
    // both rows come back first and are skipped, and the page must go on to the follow.
    name: 'two rows that differ only in op kind, then a follow: a reader taking one event at a time gets every event',
    plant: 'kind-rows-shorten-page',
    script: {
      writers: [
        {
          calls: [
            { atMs: 0, method: 'mute', actor: A, other: B, positionMs: 500 },
            { atMs: 100, method: 'follow', actor: A, other: B, positionMs: 500 },
            { atMs: 700, method: 'follow', actor: B, other: A },
          ],
        },
      ],
      readerLimit: 1,
      readerWaits: false,
    },
  },
  {
    // A client's retry of a follow at an explicit position (its `Graph-Position`), sent to a second
    // instance while the first is still at work: both read the pair before either append lands,
    // and each takes a slot of its own clock (the position is older than both clocks); the second's
    // append lands after the first wrote its feed row, at the second's own (later) slot.
    name: 'one follow at an explicit position delivered twice at once by two instances: its event is delivered once',
    plant: 'op-slot-unclaimed',
    script: {
      writers: [
        { calls: [{ atMs: 0, method: 'follow', actor: A, other: B, positionMs: -500 }] },
        { skewMs: 300, calls: [{ atMs: 5, method: 'follow', actor: A, other: B, positionMs: -500 }] },
      ],
      // The second's append reaches the node after the first has re-read and written its rows.
      delays: (w, call, statement) =>
        w === 1 && call === 0 && statement === 'append' ? { reachMs: 200 } : undefined,
    },
  },
];
