/**
 * The worker jobs' unit tests' world: the in-memory store and lists with `users` accounts (`u1`…)
 * put through the graph service, the follows `follow` makes, the account tasks settled; and the
 * jobs' dependencies on them, set to run a job at once (no settle, no sweep rate to wait on, no
 * request budget).
 */
import { GraphService } from '../../../src/graph/graph-service.js';
import type { WorkerJobDeps } from '../../../src/jobs/worker-jobs.js';
import { SingleBucketLists } from '../../graph/support/single-bucket-lists.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';

export async function jobWorld(
  users: number,
  follow: (graph: GraphService) => Promise<void> = async () => {},
): Promise<{ store: MemoryGraphStore; deps: WorkerJobDeps }> {
  const store = new MemoryGraphStore();
  const lists = new SingleBucketLists(store);
  const graph = new GraphService({ store, lists, maxFollowing: 100, countLeaseMs: 0 });
  for (let id = 1n; id <= BigInt(users); id++) await graph.putUser({ id, username: `u${id}` });
  await follow(graph);
  await graph.settleAccountTasks();
  return {
    store,
    deps: { store, lists, settleMs: 0, bucketRows: 1000, sweepRowsPerSecond: 1_000_000, log: () => {} },
  };
}

/** Follows from each of `users` accounts to the next `span` (a chain: every list small, none empty). */
export function chainFollows(users: number, span: number) {
  return async (graph: GraphService) => {
    for (let a = 1n; a <= BigInt(users); a++)
      for (let b = a + 1n; b <= a + BigInt(span) && b <= BigInt(users); b++) await graph.follow(a, b);
  };
}
