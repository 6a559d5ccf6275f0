/**
 * The repair sweep: `npm run jobs -- repair-sweep [--dry-run] [--rate N] [--resume]`. Walks the
 * whole graph by token range, finds where the projection (edges, inverse edges, list rows,
 * counters) disagrees with the pair histories, and repairs it through `repairPair`.
 *
 * Design note.
 *
 * Scan. The Murmur3 ring is split into `ranges` equal slices; the sweep walks `following`,
 * `followers`, `relation_lists`, `edges_out`, `pair_ops`, `usernames` and `users` in turn, each
 * over every slice, a page of distinct partition keys at a time (`token(pk) > last AND token(pk)
 * <= end`), and checks every partition found against its counterparts with point or
 * single-partition reads. The list tables go first so that their count check sees the counters
 * before the sweep's own repairs move rows (whose count effects the reconciler absorbs through the
 * marks the sweep leaves): the report is then the same whatever the token order, and the same as a
 * dry run's. `usernames` goes before `users` for the same reason (its releases of orphans come
 * before the claims of missing names), and `users` last so that a run saved before it existed
 * resumes where it stopped. Each name pass costs a page of keys per `pageSize` accounts and up
 * to two point reads per account (a claim and its holder's row; a user row, with its cells' write
 * times, and its name's claim). Nothing is collected across
 * pages: memory is one page of partitions, one page of rows inside one partition, the fixes of
 * that page (at most `pageSize` partitions × rows per partition page) and the page's snapshot of
 * the deactivated-accounts registry (at most `REGISTRY_BOUND` ids).
 *
 * Findings, one kind per table so no fault is counted twice:
 *  - `fold_mismatch` (pair_ops): the fold of the pair's history disagrees with its stored forward
 *    edge states (state, position or created_at of any edge the history touched) — the half-written
 *    follow: an op appended whose edge write never happened. An active stored edge that no op of
 *    the history touched is reported too, but the rewrite leaves it (nothing says what it should be).
 *  - `missing_inverse` (edges_out): an active forward edge whose inverse row (`edges_in`, in the
 *    bucket of the target's `in` list read layout) is missing, not active, or at another created_at.
 *  - `missing_row` (edges_out): an active forward edge without one of its two list rows (counted per
 *    missing row) in the read layouts' buckets.
 *  - `ghost_row` (list tables): a list row whose forward edge is missing, not active or active since
 *    another created_at.
 *  - `orphan_claim` (usernames): a claimed name that its holder's user row does not use (a rename
 *    lost to a concurrent one, a PUT that failed after its claim), claimed over
 *    `CLAIM_SETTLE_MICROS` ago (a younger claim may belong to a PUT still landing). The fix
 *    releases it, conditioned on the holder (a lightweight transaction, off the edge path).
 *  - `missing_claim` (users): a user whose stored name has no claim row, so another account may
 *    claim it: two overlapping PUTs of one account, one releasing the name after reading its row
 *    back while the other's cells, naming it, land after that read (the PUT's re-check in
 *    `accounts.ts` narrows this, but a write can land after any read). Checked only once the
 *    username cell is `CLAIM_SETTLE_MICROS` old (its write time, which the store returns): a
 *    younger one may be a PUT still landing. Another account's claim that its row does not use is
 *    an orphan, which the usernames pass, run before this one, releases: it counts as missing too
 *    (so a dry run reports what a real run fixes) unless younger than the settle time (left to the
 *    next run). The fix is the PUT's own claim (`INSERT … IF NOT EXISTS`), which never takes
 *    another account's: a claim made since the check stays, and the next run sees a conflict or
 *    an orphan. Its one harm: a rename away from the name in flight may release it between the
 *    sweep's two reads; the claim made is then an orphan, released by the next run.
 *  - `name_conflict` (users): the user's name is claimed by another account whose row uses it too
 *    (`holder and user both named name`, once per user not holding the claim): two accounts hold
 *    one name. No automatic fix (which one keeps it is the account service's call): the operator
 *    renames one of them through a user PUT; the next sweep then finds nothing, or claims the name
 *    for the other if the renamed one held it.
 *  - `count_drift` (list tables): the list's served count differs from its rows without
 *    deactivated members (checked once per list, when the sweep reaches the list's first read
 *    bucket, through the registry of deactivated accounts; lists without any row partition are
 *    not seen; a list already marked dirty is skipped and counted in `countsPending`: the
 *    reconciler is due to recount it, typically for a write in flight). A ghost row is also a count
 *    drift of its list, so both are reported.
 *
 * Fixes. Every finding's pair is re-folded and rewritten by `repairPair` at the version of the
 * history it read, so a newer user action that lands meanwhile (a higher version) wins: a repair
 * never resurrects an edge that a later unfollow removed. Ghost rows at a position the history does
 * not know are deleted at that same version (the wall-clock version for a pair with no history).
 * Counters are the reconciler's: the sweep marks dirty the lists it touched (both projections of
 * every edge of a repaired pair, and every drifted list) and the in-service reconciler (or `jobs
 * reconcile-dirty`) recounts them. `--dry-run` writes nothing but its own progress (under its own
 * job name) and reports drift by kind.
 *
 * Progress. After every page the sweep saves (range index, table, last token, running totals) in
 * `sweep_progress`; `--resume` continues an unfinished run from there, with the totals of the
 * whole run. Without `--resume` a new run starts from the first range (a finished or abandoned
 * run is not resumed implicitly: a sweep is cheap to restart and an explicit flag avoids resuming
 * a run whose options differed). Work done after the last save is redone on resume, which the
 * idempotent repair makes harmless (findings of that page may be counted twice in the totals).
 *
 * Rate. `--rate N` caps rows read per second (partitions, edges, list rows and ops all count),
 * measured over the whole run; pages sleep as needed.
 *
 * Limits. A forward edge row with no history and no inverse drift, and an inverse row without its
 * forward row, are not looked for. Rows in bucket codes outside a list's read layout (a growth in
 * flight or a retired layout not dropped yet) are skipped. Live traffic can make a check see a
 * write half-done: that is reported as drift and the repair is a harmless rewrite.
 */

import { registryFilter } from '../graph/accounts/account-state.js';
import { foldedEdges } from '../graph/pair/pair-repair.js';
import type { MemberFilter } from '../lists/contracts.js';
import { countBucket } from '../lists/list-walker.js';
import { bucketCode, bucketCodeOf } from '../model/buckets.js';
import { nowPosition } from '../model/clock.js';
import { UsernameTakenError } from '../model/errors.js';
import { type Directory, readCodeOf, readCodes } from '../model/time-buckets.js';
import {
  type BucketLayout,
  type EdgeRecord,
  edgeKey,
  type ListEntry,
  type ListKey,
  listId,
  listIn,
  listOut,
  projections,
  type UserId,
} from '../model/types.js';
import type { ScannedKey, ScanTable, TokenRange } from '../ports/records.js';
import { type RepairDeps, repairPairFolded } from './repair.js';
import {
  type DriftKind,
  emptyTotals,
  type Finding,
  SWEEP_TABLES,
  type SweepOptions,
  type SweepReport,
  type SweepTable,
  type SweepTotals,
} from './repair-sweep-report.js';
import { edgeName, PageFixes, splitRing, throttle } from './sweep-page.js';
import { openSweepRun } from './sweep-run.js';

export {
  DRIFT_KINDS,
  type DriftKind,
  type Finding,
  SWEEP_TABLES,
  type SweepOptions,
  type SweepProgressEvent,
  type SweepReport,
  type SweepTotals,
} from './repair-sweep-report.js';
export { splitRing } from './sweep-page.js';

/**
 * How old a username claim must be (µs) before the sweep releases it unused: a PUT claims before
 * it writes, and lands or fails within seconds.
 */
export const CLAIM_SETTLE_MICROS = 60_000_000n;
/**
 * Sweeps the whole graph (or continues the saved run with `resume`), repairing what it finds unless
 * `dryRun`. Returns the report of the whole run.
 */
export async function repairSweep(deps: RepairDeps, o: SweepOptions = {}): Promise<SweepReport> {
  const { store } = deps;
  const dryRun = o.dryRun ?? false;
  const job = o.job ?? (dryRun ? 'repair-sweep:dry-run' : 'repair-sweep');
  const pageSize = o.pageSize ?? 100;
  const rowPage = o.rowPageSize ?? 500;
  const sampleLimit = o.sampleLimit ?? 1000;
  const run = await openSweepRun<SweepTotals>(store, job, {
    resume: o.resume === true,
    fresh: emptyTotals,
    newRunId: () => `${nowPosition()}`,
  });
  const { runId, totals, resumed } = run;
  // A run saved before a table or a kind was added reads them as zero.
  totals.partitions = { ...emptyTotals().partitions, ...totals.partitions };
  totals.findings = { ...emptyTotals().findings, ...totals.findings };
  const ranges = splitRing(resumed ? resumed.ranges : (o.ranges ?? 64));
  const samples: Finding[] = [];
  const startedMs = performance.now();
  const rowsAtStart = totals.rows;
  let pagesThisRun = 0;

  const found = (kind: DriftKind, what: string) => {
    totals.findings[kind]++;
    if (samples.length < sampleLimit) samples.push({ kind, what });
  };

  // The layouts and directories met in this run (one read per list).
  const placed = new Map<string, Promise<{ layout: BucketLayout; directory: Directory }>>();
  const placeOf = (list: ListKey) => {
    const k = listId(list);
    let p = placed.get(k);
    if (!p) {
      p = Promise.all([store.getLayout(list), store.getDirectory(list)]).then(([layout, directory]) => ({
        layout,
        directory,
      }));
      placed.set(k, p);
    }
    return p;
  };
  const layoutOf = async (list: ListKey) => (await placeOf(list)).layout;
  const readCode = async (list: ListKey, entry: ListEntry) => {
    const { directory } = await placeOf(list);
    return readCodeOf(directory, entry);
  };

  // ---- checks, one per table ----

  const checkPair = async (lo: UserId, hi: UserId, fixes: PageFixes) => {
    const [history, stored] = await Promise.all([store.readPairHistory(lo, hi), store.getPairEdges(lo, hi)]);
    totals.rows += history.ops.length + stored.length;
    const byKey = new Map(stored.map((e) => [edgeKey(e.sourceId, e.relation, e.targetId), e]));
    let agree = true;
    for (const [k, f] of foldedEdges(history)) {
      const s = byKey.get(k);
      if (
        !s ||
        s.state !== f.state ||
        s.position !== f.position ||
        (f.state === 'active' && s.createdAt !== f.createdAt)
      ) {
        agree = false;
      }
      byKey.delete(k);
    }
    // An active stored edge that no op of the history touched: reported (a repair cannot know what
    // should stand there, so it stays until an op on that edge rewrites it).
    for (const e of byKey.values()) if (e.state === 'active') agree = false;
    if (!agree) {
      found('fold_mismatch', `${lo}|${hi}`);
      fixes.pair(lo, hi);
    }
  };

  const checkEdge = async (e: EdgeRecord, fixes: PageFixes) => {
    if (e.state !== 'active') return;
    const outList = listOut(e.sourceId, e.relation);
    const inList = listIn(e.targetId, e.relation);
    const inLayout = await layoutOf(inList);
    const outEntry = { createdAt: e.createdAt, otherId: e.targetId };
    const inEntry = { createdAt: e.createdAt, otherId: e.sourceId };
    const [inverse, outRow, inRow] = await Promise.all([
      store.getEdgesIn(e.targetId, e.relation, [e.sourceId], inLayout).then((m) => m.get(e.sourceId)),
      readCode(outList, outEntry).then((code) => store.hasListRow(outList, code, outEntry)),
      readCode(inList, inEntry).then((code) => store.hasListRow(inList, code, inEntry)),
    ]);
    let drift = false;
    if (inverse?.state !== 'active' || inverse.createdAt !== e.createdAt) {
      found('missing_inverse', edgeName(e, e.createdAt));
      drift = true;
    }
    for (const [has, list] of [
      [outRow, 'out'],
      [inRow, 'in'],
    ] as const) {
      if (has) continue;
      found('missing_row', `${edgeName(e, e.createdAt)} ${list}`);
      drift = true;
    }
    if (drift) fixes.pair(e.sourceId, e.targetId);
  };

  const checkSource = async (sourceId: UserId, fixes: PageFixes) => {
    let after: EdgeRecord | null = null;
    for (;;) {
      const page = await store.edgesOfSource(sourceId, after, rowPage);
      totals.rows += page.length;
      await Promise.all(page.map((e) => checkEdge(e, fixes)));
      await throttle(o.rate, totals.rows - rowsAtStart, startedMs);
      if (page.length < rowPage) return;
      after = page.at(-1) as EdgeRecord;
    }
  };

  /** `hidden`: the deactivated members, which counts exclude (one registry read per page of partitions). */
  const checkListBucket = async (list: ListKey, code: number, fixes: PageFixes, hidden: MemberFilter) => {
    const { directory } = await placeOf(list);
    const codes = readCodes(directory);
    if (!codes.includes(code)) return;
    // The partition whose sweep checks the list's count: the oldest (a time list's newest bucket
    // may still be empty, and an empty partition is never met by the token scan).
    const checkCode = codes.at(-1);
    let after: ListEntry | null = null;
    let rows = 0;
    for (;;) {
      const page = await store.listBucket(list, code, after, rowPage);
      rows += page.length;
      // The check partition is where the count check happens: count as the served count does.
      if (code === checkCode) rows -= (await hidden(page.map((r) => r.otherId))).size;
      totals.rows += page.length;
      // Out lists: every row's edge has the owner as source, so one read answers the page.
      const edges =
        list.direction === 'out'
          ? await store.getEdgesOut(
              list.userId,
              list.relation,
              page.map((r) => r.otherId),
            )
          : new Map(
              await Promise.all(
                page.map(
                  async (r) =>
                    [
                      r.otherId,
                      (await store.getEdgesOut(r.otherId, list.relation, [list.userId])).get(list.userId),
                    ] as const,
                ),
              ),
            );
      for (const r of page) {
        const e = edges.get(r.otherId);
        if (e && e.state === 'active' && e.createdAt === r.createdAt) continue;
        const [s, t] = list.direction === 'out' ? [list.userId, r.otherId] : [r.otherId, list.userId];
        found(
          'ghost_row',
          `${edgeName({ sourceId: s, relation: list.relation, targetId: t }, r.createdAt)} ${list.direction}`,
        );
        fixes.pair(list.userId, r.otherId, {
          list,
          bucketCode: code,
          createdAt: r.createdAt,
          otherId: r.otherId,
        });
        fixes.mark(list, r.otherId);
      }
      await throttle(o.rate, totals.rows - rowsAtStart, startedMs);
      if (page.length < rowPage) break;
      after = page.at(-1) as ListEntry;
    }
    if (code !== checkCode) return;
    // A list with pending marks is already due for a recount (a write in flight, usually): not drift.
    if (await store.hasDirty(list)) {
      totals.countsPending++;
      return;
    }
    let total = rows;
    for (const c of codes.slice(0, -1)) total += await countBucket(store, list, c, 5000, hidden);
    const served = await store.getCount(list);
    if (served !== total) {
      found(
        'count_drift',
        `${list.userId} ${list.relation} ${list.direction}: counted ${total}, served ${served}`,
      );
      // Any bucket's mark makes the reconciler recompute the list's correction.
      const mark = bucketCode((await layoutOf(list)).buckets, 0);
      fixes.dirty.set(`${listId(list)}|code${mark}`, { list, code: mark });
    }
  };

  const checkClaim = async (username: string, fixes: PageFixes) => {
    const claim = await store.getUsernameClaim(username);
    totals.rows++;
    if (!claim || nowPosition() - claim.claimedAt < CLAIM_SETTLE_MICROS) return;
    const holder = await store.getUser(claim.userId);
    if (holder?.username.toLowerCase() === username) return;
    found('orphan_claim', `${username} ${claim.userId}`);
    fixes.claims.push({ username, userId: claim.userId });
  };

  const checkUserClaim = async (userId: UserId, fixes: PageFixes) => {
    const read = await store.getUserVersioned(userId);
    totals.rows++;
    const { user } = read;
    // A name written under a minute ago may belong to a PUT still landing (see the note).
    if (!user || nowPosition() - (read.versions.username ?? 0n) < CLAIM_SETTLE_MICROS) return;
    const name = user.username.toLowerCase();
    const claim = await store.getUsernameClaim(name);
    totals.rows++;
    if (claim?.userId === userId) return;
    if (claim) {
      const holder = await store.getUser(claim.userId);
      totals.rows++;
      if (holder?.username.toLowerCase() === name) {
        found('name_conflict', `${claim.userId} and ${userId} both named ${name}`);
        return;
      }
      // An orphan: released by the usernames pass before this one (a young one is left to the
      // next run: its holder's PUT may be landing, and then this is a conflict).
      if (nowPosition() - claim.claimedAt < CLAIM_SETTLE_MICROS) return;
    }
    found('missing_claim', `${name} ${userId}`);
    fixes.missingClaims.push({ username: name, userId });
  };

  const check = (key: ScannedKey, fixes: PageFixes, hidden: MemberFilter): Promise<void> => {
    switch (key.table) {
      case 'pair_ops':
        return checkPair(key.lowId, key.highId, fixes);
      case 'edges_out':
        return checkSource(key.sourceId, fixes);
      case 'following':
      case 'followers':
      case 'relation_lists':
        return checkListBucket(key.list, key.bucketCode, fixes, hidden);
      case 'usernames':
        return checkClaim(key.username, fixes);
      case 'users':
        return checkUserClaim(key.userId, fixes);
      case 'list_counts':
      case 'bucket_counts':
        return Promise.resolve();
    }
  };

  const applyFixes = async (fixes: PageFixes) => {
    if (dryRun) return;
    for (const c of fixes.claims) await store.releaseUsername(c.username, c.userId);
    for (const c of fixes.missingClaims) {
      // Another account that claimed the name since the check keeps it: the next run sees a
      // conflict (its PUT landed) or an orphan then a missing claim (it failed).
      await store.claimUsername(c.username, c.userId).catch((e: unknown) => {
        if (!(e instanceof UsernameTakenError)) throw e;
      });
    }
    for (const { a, b, strays } of fixes.pairs.values()) {
      const r = await repairPairFolded(deps, a, b, {
        strays,
        afterRead: o.afterRepairRead
          ? () => (o.afterRepairRead as (a: UserId, b: UserId) => Promise<void>)(a, b)
          : undefined,
      });
      totals.repairedPairs++;
      for (const e of r.folded) for (const p of projections(e)) fixes.mark(p.list, p.otherId);
    }
    const now = nowPosition();
    await Promise.all(
      [...fixes.dirty.values()].map(async ({ list, otherId, code }) => {
        // Dirty marks are codes of the inverse-edge layout (`model/buckets.ts`), not time buckets.
        const c = code ?? bucketCodeOf((await store.getLayout(list)).buckets, otherId as UserId);
        await store.markDirty(list, c, now);
        totals.markedDirty++;
      }),
    );
  };

  // ---- the walk ----

  let rangeIndex = resumed ? resumed.rangeIndex : 0;
  let tableIndex = resumed ? Math.max(0, SWEEP_TABLES.indexOf(resumed.table as SweepTable)) : 0;
  let lastToken: bigint | null = resumed ? resumed.lastToken : null;
  const save = (done: boolean) =>
    run.save(
      { ranges: ranges.length, rangeIndex, table: SWEEP_TABLES[tableIndex] ?? 'pair_ops', lastToken },
      done,
    );
  const fraction = () => {
    const r = ranges[rangeIndex];
    if (!r || tableIndex >= SWEEP_TABLES.length) return 1;
    const within = lastToken === null ? 0 : Number(lastToken - r.start) / Number(r.end - r.start);
    return (tableIndex + (rangeIndex + within) / ranges.length) / SWEEP_TABLES.length;
  };
  const report = (complete: boolean): SweepReport => ({ ...totals, dryRun, complete, samples, runId });

  while (tableIndex < SWEEP_TABLES.length) {
    if (o.maxPages !== undefined && pagesThisRun >= o.maxPages) return report(false);
    const range = ranges[rangeIndex] as TokenRange;
    const table = SWEEP_TABLES[tableIndex] as ScanTable;
    const page = await store.scanPartitions(table, range, lastToken, pageSize);
    const fixes = new PageFixes();
    const hidden = registryFilter(store);
    for (const p of page) {
      totals.partitions[table as SweepTable]++;
      await check(p.key, fixes, hidden);
    }
    await applyFixes(fixes);
    placed.clear();
    totals.pages++;
    pagesThisRun++;
    lastToken = page.at(-1)?.token ?? lastToken;
    if (page.length < pageSize) {
      // This range is done for this table: on to the next range, then the next table.
      lastToken = null;
      rangeIndex++;
      if (rangeIndex === ranges.length) {
        rangeIndex = 0;
        tableIndex++;
      }
    }
    if (tableIndex < SWEEP_TABLES.length) await save(false);
    o.onProgress?.({ totals, fraction: fraction(), elapsedMs: performance.now() - startedMs });
    await throttle(o.rate, totals.rows - rowsAtStart, startedMs);
  }
  await save(true);
  o.onProgress?.({ totals, fraction: 1, elapsedMs: performance.now() - startedMs });
  return report(true);
}
