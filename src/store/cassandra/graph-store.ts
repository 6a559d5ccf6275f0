/**
 * `GraphStore` on Cassandra / ScyllaDB: one store per port over one executor, joined here.
 *
 * Design note. Every edge-state and list-row write carries the caller's `version` as
 * `USING TIMESTAMP`, so Cassandra's cell-level last-writer-wins is the conflict resolution: no
 * lightweight transactions on the edge path, no read-modify-write here. The four rows of an edge
 * change (forward state, inverse state, the two list rows) go out as one LOGGED batch: the
 * batchlog makes the multi-partition write all-or-nothing eventually, so a coordinator crash
 * cannot leave one direction without the other once the batchlog replays. (`batchMode:
 * 'unlogged'` exists only so the benchmark can measure what the batchlog costs.)
 *
 * LWT is used off the edge path only: claiming a username, replacing a list's layout and fixing
 * an idempotency receipt's first outcome.
 *
 * Counters are not idempotent and cannot carry a timestamp; they are spread over shards, fed
 * deltas from real transitions, and reconciled against the lists by a job.
 *
 * Where things are: executing, timing, idempotence, paging and the batchlog fallback in
 * `executor.ts`; every statement with its idempotence flag in `statements.ts`; partition-key
 * values in `keys.ts`; every row mapper in `rows.ts`; driver errors in `errors.ts`; one store per
 * port (`user-store.ts`, `pair-history-store.ts`, `edge-store.ts`, `list-store.ts`,
 * `search-store.ts`, `count-store.ts`, `receipt-store.ts`, `account-task-store.ts`, `scan-store.ts`,
 * `suggestion-store.ts`, `event-store.ts`, `relay-cursor-store.ts`). This class only delegates; each method is a prototype method, so a test
 * double can override one and call `super`.
 */
import type { AccountTaskStore } from '../../ports/account-task-store.js';
import type { CountStore } from '../../ports/count-store.js';
import type { EdgeStore } from '../../ports/edge-store.js';
import type { EventStore, FeedIntentStore } from '../../ports/event-store.js';
import type { GraphStore } from '../../ports/graph-store.js';
import type { ListStore } from '../../ports/list-store.js';
import type { PairHistoryStore } from '../../ports/pair-history-store.js';
import type { ReceiptStore } from '../../ports/receipt-store.js';
import type { RelayCursorStore } from '../../ports/relay-cursor-store.js';
import type { ScanStore } from '../../ports/scan-store.js';
import type { SearchStore } from '../../ports/search-store.js';
import type { SuggestionStore } from '../../ports/suggestion-store.js';
import type { UserStore } from '../../ports/user-store.js';
import { CassandraAccountTaskStore } from './account-task-store.js';
import type { CqlClient } from './client.js';
import { CassandraCountStore } from './count-store.js';
import { CassandraEdgeStore } from './edge-store.js';
import { CassandraEventStore } from './event-store.js';
import { CqlExecutor, type ExecutorOptions } from './executor.js';
import { CassandraListStore } from './list-store.js';
import { CassandraPairHistoryStore } from './pair-history-store.js';
import { CassandraReceiptStore } from './receipt-store.js';
import { CassandraRelayCursorStore } from './relay-cursor-store.js';
import { CassandraScanStore } from './scan-store.js';
import { CassandraSearchStore } from './search-store.js';
import { S } from './statements.js';
import { CassandraSuggestionStore } from './suggestion-store.js';
import { CassandraUserStore } from './user-store.js';

export type CassandraGraphStoreOptions = ExecutorOptions & {
  /** How long the feed keeps events (its rows' TTL); default 7 days. */
  eventRetentionSeconds?: number;
  /**
   * Whether the edge batch writes follows rows' search rows and indexed names (default true).
   * Off only for the S2 benchmark's baseline arm (what a follow costs without the index): a store
   * without it must not serve search.
   */
  searchIndex?: boolean;
  /** The clock a feed read from the start counts its retention back from (µs); default the system's. */
  clock?: () => bigint;
};

type Args<P, M extends keyof P> = P[M] extends (...args: infer A) => unknown ? A : never;

export class CassandraGraphStore implements GraphStore {
  private readonly cql: CqlExecutor;
  private readonly users: UserStore;
  private readonly relayCursors: RelayCursorStore;
  private readonly pairs: PairHistoryStore;
  private readonly edges: EdgeStore;
  private readonly lists: ListStore;
  private readonly search: SearchStore;
  private readonly counts: CountStore;
  private readonly receipts: ReceiptStore;
  private readonly tasks: AccountTaskStore;
  private readonly scans: ScanStore;
  private readonly suggestions: SuggestionStore;
  private readonly events: CassandraEventStore;

  constructor(client: CqlClient, options: CassandraGraphStoreOptions = {}) {
    this.cql = new CqlExecutor(client, options);
    this.events = new CassandraEventStore(this.cql, options.eventRetentionSeconds, options.clock);
    this.users = new CassandraUserStore(this.cql, this.events);
    this.relayCursors = new CassandraRelayCursorStore(this.cql);
    this.pairs = new CassandraPairHistoryStore(this.cql);
    this.edges = new CassandraEdgeStore(this.cql, this.events, options.searchIndex ?? true);
    this.lists = new CassandraListStore(this.cql);
    this.search = new CassandraSearchStore(this.cql);
    this.counts = new CassandraCountStore(this.cql);
    this.receipts = new CassandraReceiptStore(this.cql);
    this.tasks = new CassandraAccountTaskStore(this.cql);
    this.scans = new CassandraScanStore(this.cql);
    this.suggestions = new CassandraSuggestionStore(this.cql);
  }

  getUser(...a: Args<UserStore, 'getUser'>) {
    return this.users.getUser(...a);
  }
  getUsers(...a: Args<UserStore, 'getUsers'>) {
    return this.users.getUsers(...a);
  }
  getUserVersioned(...a: Args<UserStore, 'getUserVersioned'>) {
    return this.users.getUserVersioned(...a);
  }
  putUserFields(...a: Args<UserStore, 'putUserFields'>) {
    return this.users.putUserFields(...a);
  }
  claimUsername(...a: Args<UserStore, 'claimUsername'>) {
    return this.users.claimUsername(...a);
  }
  getUsernameClaim(...a: Args<UserStore, 'getUsernameClaim'>) {
    return this.users.getUsernameClaim(...a);
  }
  releaseUsername(...a: Args<UserStore, 'releaseUsername'>) {
    return this.users.releaseUsername(...a);
  }
  putUser(...a: Args<UserStore, 'putUser'>) {
    return this.users.putUser(...a);
  }
  listDeactivated(...a: Args<UserStore, 'listDeactivated'>) {
    return this.users.listDeactivated(...a);
  }
  putActivity(...a: Args<UserStore, 'putActivity'>) {
    return this.users.putActivity(...a);
  }
  getActivity(...a: Args<UserStore, 'getActivity'>) {
    return this.users.getActivity(...a);
  }

  getRelayCursor(...a: Args<RelayCursorStore, 'getRelayCursor'>) {
    return this.relayCursors.getRelayCursor(...a);
  }
  putRelayCursor(...a: Args<RelayCursorStore, 'putRelayCursor'>) {
    return this.relayCursors.putRelayCursor(...a);
  }
  listRelayCursors(...a: Args<RelayCursorStore, 'listRelayCursors'>) {
    return this.relayCursors.listRelayCursors(...a);
  }

  putIntent(...a: Args<FeedIntentStore, 'putIntent'>) {
    return this.events.putIntent(...a);
  }
  deleteIntent(...a: Args<FeedIntentStore, 'deleteIntent'>) {
    return this.events.deleteIntent(...a);
  }
  readIntents(...a: Args<FeedIntentStore, 'readIntents'>) {
    return this.events.readIntents(...a);
  }
  readIntentBound() {
    return this.events.readIntentBound();
  }
  saveIntentBound(...a: Args<FeedIntentStore, 'saveIntentBound'>) {
    return this.events.saveIntentBound(...a);
  }
  decideIntent(...a: Args<FeedIntentStore, 'decideIntent'>) {
    return this.events.decideIntent(...a);
  }
  claimOpSlot(...a: Args<FeedIntentStore, 'claimOpSlot'>) {
    return this.events.claimOpSlot(...a);
  }
  fenceOp(...a: Args<PairHistoryStore, 'fenceOp'>) {
    return this.pairs.fenceOp(...a);
  }
  readEventRows(...a: Args<EventStore, 'readEventRows'>) {
    return this.events.readEventRows(...a);
  }

  listSearchRows(...a: Args<SearchStore, 'listSearchRows'>) {
    return this.search.listSearchRows(...a);
  }
  writeSearchRows(...a: Args<SearchStore, 'writeSearchRows'>) {
    return this.search.writeSearchRows(...a);
  }
  copySearchRows(...a: Args<SearchStore, 'copySearchRows'>) {
    return this.search.copySearchRows(...a);
  }
  deleteSearchRange(...a: Args<SearchStore, 'deleteSearchRange'>) {
    return this.search.deleteSearchRange(...a);
  }

  readPairHistory(...a: Args<PairHistoryStore, 'readPairHistory'>) {
    return this.pairs.readPairHistory(...a);
  }
  appendPair(...a: Args<PairHistoryStore, 'appendPair'>) {
    return this.pairs.appendPair(...a);
  }

  writeEdges(...a: Args<EdgeStore, 'writeEdges'>) {
    return this.edges.writeEdges(...a);
  }
  getEdgesOut(...a: Args<EdgeStore, 'getEdgesOut'>) {
    return this.edges.getEdgesOut(...a);
  }
  getEdgesOutOf(...a: Args<EdgeStore, 'getEdgesOutOf'>) {
    return this.edges.getEdgesOutOf(...a);
  }
  getEdgesIn(...a: Args<EdgeStore, 'getEdgesIn'>) {
    return this.edges.getEdgesIn(...a);
  }
  getPairEdges(...a: Args<EdgeStore, 'getPairEdges'>) {
    return this.edges.getPairEdges(...a);
  }

  listBucket(...a: Args<ListStore, 'listBucket'>) {
    return this.lists.listBucket(...a);
  }
  listBucketNewer(...a: Args<ListStore, 'listBucketNewer'>) {
    return this.lists.listBucketNewer(...a);
  }
  getLayout(...a: Args<ListStore, 'getLayout'>) {
    return this.lists.getLayout(...a);
  }
  putLayout(...a: Args<ListStore, 'putLayout'>) {
    return this.lists.putLayout(...a);
  }
  replaceLayout(...a: Args<ListStore, 'replaceLayout'>) {
    return this.lists.replaceLayout(...a);
  }
  getDirectory(...a: Args<ListStore, 'getDirectory'>) {
    return this.lists.getDirectory(...a);
  }
  getPlacements(...a: Args<ListStore, 'getPlacements'>) {
    return this.lists.getPlacements(...a);
  }
  updateDirectory(...a: Args<ListStore, 'updateDirectory'>) {
    return this.lists.updateDirectory(...a);
  }
  copyBucketPage(...a: Args<ListStore, 'copyBucketPage'>) {
    return this.lists.copyBucketPage(...a);
  }
  listBucketVersions(...a: Args<ListStore, 'listBucketVersions'>) {
    return this.lists.listBucketVersions(...a);
  }
  setListUsernames(...a: Args<ListStore, 'setListUsernames'>) {
    return this.lists.setListUsernames(...a);
  }
  dropBucket(...a: Args<ListStore, 'dropBucket'>) {
    return this.lists.dropBucket(...a);
  }
  deleteBucketRange(...a: Args<ListStore, 'deleteBucketRange'>) {
    return this.lists.deleteBucketRange(...a);
  }
  copyInverseEdgePage(...a: Args<ListStore, 'copyInverseEdgePage'>) {
    return this.lists.copyInverseEdgePage(...a);
  }
  dropInverseEdgeBucket(...a: Args<ListStore, 'dropInverseEdgeBucket'>) {
    return this.lists.dropInverseEdgeBucket(...a);
  }

  incrementCount(...a: Args<CountStore, 'incrementCount'>) {
    return this.counts.incrementCount(...a);
  }
  incrementCounts(...a: Args<CountStore, 'incrementCounts'>) {
    return this.counts.incrementCounts(...a);
  }
  markDirtyBuckets(...a: Args<CountStore, 'markDirtyBuckets'>) {
    return this.counts.markDirtyBuckets(...a);
  }
  getCount(...a: Args<CountStore, 'getCount'>) {
    return this.counts.getCount(...a);
  }
  markDirty(...a: Args<CountStore, 'markDirty'>) {
    return this.counts.markDirty(...a);
  }
  listDirty(...a: Args<CountStore, 'listDirty'>) {
    return this.counts.listDirty(...a);
  }
  hasDirty(...a: Args<CountStore, 'hasDirty'>) {
    return this.counts.hasDirty(...a);
  }
  clearDirty(...a: Args<CountStore, 'clearDirty'>) {
    return this.counts.clearDirty(...a);
  }
  getCountSync(...a: Args<CountStore, 'getCountSync'>) {
    return this.counts.getCountSync(...a);
  }
  putCountSync(...a: Args<CountStore, 'putCountSync'>) {
    return this.counts.putCountSync(...a);
  }
  getUserCounts(...a: Args<CountStore, 'getUserCounts'>) {
    return this.counts.getUserCounts(...a);
  }
  getUserCountSync(...a: Args<CountStore, 'getUserCountSync'>) {
    return this.counts.getUserCountSync(...a);
  }
  putUserCountSync(...a: Args<CountStore, 'putUserCountSync'>) {
    return this.counts.putUserCountSync(...a);
  }
  putReconciliation(...a: Args<CountStore, 'putReconciliation'>) {
    return this.counts.putReconciliation(...a);
  }
  getReconciliation(...a: Args<CountStore, 'getReconciliation'>) {
    return this.counts.getReconciliation(...a);
  }

  getReceipt(...a: Args<ReceiptStore, 'getReceipt'>) {
    return this.receipts.getReceipt(...a);
  }
  putReceipt(...a: Args<ReceiptStore, 'putReceipt'>) {
    return this.receipts.putReceipt(...a);
  }

  putAccountTask(...a: Args<AccountTaskStore, 'putAccountTask'>) {
    return this.tasks.putAccountTask(...a);
  }
  getAccountTask(...a: Args<AccountTaskStore, 'getAccountTask'>) {
    return this.tasks.getAccountTask(...a);
  }
  listAccountTasks() {
    return this.tasks.listAccountTasks();
  }
  deleteAccountTask(...a: Args<AccountTaskStore, 'deleteAccountTask'>) {
    return this.tasks.deleteAccountTask(...a);
  }

  scanPartitions(...a: Args<ScanStore, 'scanPartitions'>) {
    return this.scans.scanPartitions(...a);
  }
  edgesOfSource(...a: Args<ScanStore, 'edgesOfSource'>) {
    return this.scans.edgesOfSource(...a);
  }
  hasListRow(...a: Args<ScanStore, 'hasListRow'>) {
    return this.scans.hasListRow(...a);
  }
  getSweepProgress(...a: Args<ScanStore, 'getSweepProgress'>) {
    return this.scans.getSweepProgress(...a);
  }
  putSweepProgress(...a: Args<ScanStore, 'putSweepProgress'>) {
    return this.scans.putSweepProgress(...a);
  }

  putSuggestions(...a: Args<SuggestionStore, 'putSuggestions'>) {
    return this.suggestions.putSuggestions(...a);
  }
  getSuggestions(...a: Args<SuggestionStore, 'getSuggestions'>) {
    return this.suggestions.getSuggestions(...a);
  }

  async databaseClockMs(): Promise<number> {
    const rs = await this.cql.exec('databaseClock', S.databaseClock, []);
    return Number(rs.first()?.now_ms);
  }

  async close(): Promise<void> {
    await this.cql.shutdown();
  }
}
