/**
 * Online re-partitioning of one list ("reshape"): rows move from a parent partition to children
 * while writers and readers keep running. One protocol, parameterised by what moves: a list's hash
 * buckets growing N → 2N (`list-growth.ts`), a closed time bucket split into sub-ranges
 * (`bucket-split.ts`), a search partition split into name ranges (`search-split.ts`).
 *
 * Design note — the steps, and the invariant each keeps: at every instant the partitions a reader
 * reads hold every row.
 *
 * 1. Plan: one compare-and-set stores the plan at stage `dual`. From then on writers write both
 *    sides (the parent and the row's child); readers still read the parent, which stays complete.
 * 2. Settle (`settleMs`: the plan's cache TTL plus the longest write in flight; also on resume).
 *    Without it a writer holding the pre-plan record could write the parent only, after its rows
 *    were copied, and the child would never have the row.
 * 3. Copy, child by child, each cell at its own write time: a concurrent delete, sent to both
 *    sides with a newer write time, wins whichever lands last, so re-copying is idempotent. Then
 *    verify (where the parameterisation can): the child must hold exactly the parent's keys of its
 *    range; a mismatch (a dual write between the two reads) re-copies, up to `verifyAttempts`,
 *    then stops with `ReshapeVerificationError`. A compare-and-set records `copied = c + 1`, so a
 *    crashed run resumes at the first child not yet copied.
 * 4. Flip: stage `flipped`; readers read the children. Writers still write both sides: a reader
 *    whose cached record predates the flip still reads the parent, which must stay complete. Settle.
 * 5. Finalize: writers write the children only. Settle (writers holding `flipped` finish; no write
 *    reaches the parent's moved rows any more).
 * 6. Clean up the parent's moved rows (a tombstone above every version written), then clear the
 *    plan.
 *
 * Many runners, one winner: each step is a compare-and-set on the record the plan lives in
 * (`compareAndSet`), from the plan this runner last wrote. The conflict rule: the stored plan must
 * be exactly that one; anything else (another runner's step, another plan) stops this runner with
 * the parameterisation's conflict error, having written nothing. A lost compare-and-set with the
 * same stored plan (the record's version bumped by an unrelated change, e.g. a time bucket
 * closing) is retried, up to `giveUpAfter` lost compare-and-sets per step.
 *
 * Rejected: a superset read of both sides during the copy (doubles the reads of the hottest lists
 * for the whole copy); blocking writers (a celebrity keeps being followed); flipping straight to
 * children-only writes (a write just after the flip, to the children only, would be invisible for
 * up to the cache TTL to a reader still on the parent); one generic "move rows" port method for
 * every kind (hash buckets, time ranges and name ranges copy, bound and compare their keys
 * differently; each kind brings its copy and verify, the protocol stays here).
 *
 * Limits. One reshape of a kind per list at a time. Writers are never blocked, so a settle that
 * is shorter than the cache TTL plus the longest write breaks the invariant: `settleMs` is the
 * caller's promise. A crash after the clean-up's tombstone and before the clear re-runs the
 * (idempotent) clean-up. Verification is a lockstep walk: it costs one more read of each moved row.
 */

import type { Position } from '../../model/types.js';

/** Where a pending reshape stands: stored with its plan and read back on resume. */
export type ReshapeStage = 'dual' | 'flipped' | 'finalized';

/** A pending reshape's stage and how many children are copied and verified. */
export interface ReshapeMark {
  stage: ReshapeStage;
  copied: number;
}

/**
 * The steps a reshape reports, in order (`planned` only when this run stored the plan; a resumed
 * run starts at its stored stage). `Id` names partitions; `Copied` is what a child's copy reports.
 */
export type ReshapeStep<Id, Copied extends { rows: number } = { rows: number }> =
  | { step: 'planned'; parent: Id; rows: number; children: Id[] }
  | ({ step: 'copied'; parent: Id; child: Id } & Copied)
  | { step: 'flipped'; parent: Id }
  | { step: 'finalized'; parent: Id }
  | { step: 'deleted'; parent: Id };

/** Options every reshape takes. */
export interface ReshapeOptions<Step> {
  /** The plan's cache TTL plus the longest write in flight, in ms (see the module note). */
  settleMs: number;
  /** Rows per read and copy page. Default 1,000. */
  pageSize?: number;
  /** Copy-and-verify rounds per child before giving up. Default 3. */
  verifyAttempts?: number;
  /** Lost compare-and-sets (with the stored plan unchanged) per step before giving up. Default 20. */
  giveUpAfter?: number;
  /** Injected for tests. */
  sleep?: (ms: number) => Promise<void>;
  /** µs since the epoch (the clean-up tombstone's version); default the system clock. */
  clock?: () => Position;
  /** Told after every step (a log line each; a test that kills the job at a step). */
  onProgress?: (p: Step) => void | Promise<void>;
}

/** Another runner (or another reshape) changed the stored plan; this runner wrote nothing more. */
export class ReshapeConflictError extends Error {
  override name: string = 'ReshapeConflictError';
}

/** A child kept differing from its parent's range after every copy round; re-run to retry. */
export class ReshapeVerificationError extends Error {
  override name = 'ReshapeVerificationError' as const;
  constructor(
    /** The child and its list, as the reshape kind names them. */
    readonly child: string,
    readonly mismatches: number,
  ) {
    super(`${child}: ${mismatches} rows differ`);
  }
}

export const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Where a plan is stored (`Raw`: a list's directory, or its bucket layout) and how a step writes
 * it. `State` is the part the conflict rule compares.
 */
export interface ReshapeRecord<Raw, State> {
  /** The record now. */
  read(): Promise<Raw>;
  /** The plan state `raw` holds. */
  stateOf(raw: Raw): State;
  /** Whether two states are the same plan at the same step. */
  same(a: State, b: State): boolean;
  /** Writes `next` if the record is still `raw` (its version); false when the compare-and-set lost. */
  write(raw: Raw, next: State): Promise<boolean>;
  /** The error for a stored plan that is not `expected` (`found`: the record read). */
  conflict(step: string, expected: State, found: Raw): Error;
}

/**
 * One step: from `expected` (what this runner last wrote) to `next` (computed from the record it
 * writes over), retried while the stored state is still `expected`. Returns the state written and
 * the record it replaced.
 */
export async function compareAndSet<Raw, State>(
  record: ReshapeRecord<Raw, State>,
  step: string,
  expected: State,
  next: State | ((raw: Raw) => State),
  giveUpAfter = 20,
): Promise<{ state: State; raw: Raw }> {
  let raw: Raw | undefined;
  for (let lost = 0; lost < giveUpAfter; lost++) {
    raw = await record.read();
    if (!record.same(record.stateOf(raw), expected)) throw record.conflict(step, expected, raw);
    const state = typeof next === 'function' ? (next as (raw: Raw) => State)(raw) : next;
    if (await record.write(raw, state)) return { state, raw };
  }
  throw record.conflict(step, expected, raw ?? (await record.read()));
}

/** A reshape kind: its record and how its plan moves through the stages. */
export interface Reshape<Raw, State> extends ReshapeRecord<Raw, State> {
  /** Stage and progress of a pending plan; null when `state` holds none. */
  markOf(state: State): ReshapeMark | null;
  /** `state` moved to `mark` (a copy recorded, the flip, the finalize). */
  at(state: State, mark: ReshapeMark): State;
  /** `state` with the plan cleared; the same state when finalizing cleared it already (no write). */
  cleared(state: State): State;
}

/** What one pending reshape moves, and how (known once its plan is stored or read back). */
export interface ReshapeMoves<Id, Copied extends { rows: number }> {
  parent: Id;
  children: readonly Id[];
  /** Copies child `c`'s rows from the parent, each cell at its write time. Idempotent. */
  copy(c: number): Promise<Copied>;
  /** Keys in exactly one of the parent's range of child `c` and the child; absent: no verify. */
  verify?(c: number): Promise<number>;
  /** Names child `c` in a verification error. */
  describe(c: number): string;
  /** Removes the parent's moved rows. Idempotent. */
  cleanUp(): Promise<void>;
}

/**
 * Runs a reshape from `start` (read by the caller): stores `plan` when none is pending (and `plan`
 * is given), then steps through settle, copy and verify, flip, finalize and clean-up. Resumable
 * from any stored stage. Returns the last state written and what moved.
 */
export async function runReshape<Raw, State, Id, Copied extends { rows: number }>(
  kind: Reshape<Raw, State>,
  start: Raw,
  plan: { next: (raw: Raw) => State; rows: number } | null,
  movesOf: (state: State, raw: Raw) => ReshapeMoves<Id, Copied>,
  o: ReshapeOptions<ReshapeStep<Id, Copied>>,
): Promise<{ state: State; parent: Id; children: Id[] }> {
  const sleep = o.sleep ?? defaultSleep;
  const giveUp = o.giveUpAfter ?? 20;
  let state = kind.stateOf(start);
  let raw = start;
  const step = async (name: string, next: State | ((raw: Raw) => State)): Promise<void> => {
    const done = await compareAndSet(kind, name, state, next, giveUp);
    state = done.state;
    raw = done.raw;
  };
  const planned = kind.markOf(state) === null;
  if (planned) {
    if (!plan) throw new RangeError('no reshape pending and no plan given');
    await step('plan', plan.next);
  }
  const m = movesOf(state, raw);
  const children = m.children.length;
  if (planned && plan) {
    await o.onProgress?.({
      step: 'planned',
      parent: m.parent,
      rows: plan.rows,
      children: [...m.children],
    });
  }
  let mark = kind.markOf(state) as ReshapeMark;
  if (mark.stage === 'dual') {
    // Also on resume: the plan may have been stored a moment before the crash.
    await sleep(o.settleMs);
    for (let c = mark.copied; c < children; c++) {
      let copied = { rows: 0 } as Copied;
      let mismatches = 0;
      for (let round = 0; round < (o.verifyAttempts ?? 3); round++) {
        copied = await m.copy(c);
        mismatches = m.verify ? await m.verify(c) : 0;
        if (mismatches === 0) break;
        await sleep(o.settleMs);
      }
      if (mismatches > 0) throw new ReshapeVerificationError(m.describe(c), mismatches);
      await step(`copied ${c}`, kind.at(state, { stage: 'dual', copied: c + 1 }));
      await o.onProgress?.({
        step: 'copied',
        parent: m.parent,
        child: m.children[c] as Id,
        ...copied,
      });
    }
    await step('flip', kind.at(state, { stage: 'flipped', copied: children }));
    mark = { stage: 'flipped', copied: children };
  }
  if (mark.stage === 'flipped') {
    await o.onProgress?.({ step: 'flipped', parent: m.parent });
    await sleep(o.settleMs);
    await step('finalize', kind.at(state, { stage: 'finalized', copied: children }));
    await o.onProgress?.({ step: 'finalized', parent: m.parent });
  }
  await sleep(o.settleMs);
  await m.cleanUp();
  const cleared = kind.cleared(state);
  if (!kind.same(cleared, state)) await step('clear', cleared);
  await o.onProgress?.({ step: 'deleted', parent: m.parent });
  return { state, parent: m.parent, children: [...m.children] };
}

/**
 * Keys in exactly one of two key streams in the same order (a lockstep walk): how a child is
 * verified against its parent's range. `next*` return null at the end; `compare` is negative when
 * its first key comes first.
 */
export async function lockstepMismatches<K>(
  nextA: () => Promise<K | null>,
  nextB: () => Promise<K | null>,
  compare: (a: K, b: K) => number,
): Promise<number> {
  let x = await nextA();
  let y = await nextB();
  let mismatches = 0;
  while (x || y) {
    const order = !x ? 1 : !y ? -1 : compare(x, y);
    if (order <= 0) x = await nextA();
    if (order >= 0) y = await nextB();
    if (order !== 0) mismatches++;
  }
  return mismatches;
}
