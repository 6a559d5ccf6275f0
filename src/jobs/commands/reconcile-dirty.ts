/**
 * `jobs reconcile-dirty`: one pass of the count reconciler (`reconcile-dirty.ts`), recounting only
 * the list buckets writers marked dirty; a line per list and a summary.
 */
import type { JobCommand } from '../job-command.js';
import type { OpenJobRuntime } from '../runtime.js';

export const reconcileDirtyCommand = {
  name: 'reconcile-dirty',
  help: 'one pass of the count reconciler: recount only the list buckets writers marked dirty',
  async run(_argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
    const { reconcileDirty } = await import('../reconcile-dirty.js');
    const rt = await openRuntime();
    try {
      const r = await reconcileDirty(rt.store, {
        onList: (l) =>
          console.log(
            `[reconcile-dirty] ${l.list.userId} ${l.list.relation}/${l.list.direction}: ${l.recounted.length} buckets recounted, count ${l.counted}, drift ${l.drift}`,
          ),
      });
      console.log(
        `[reconcile-dirty] ${r.lists} lists, ${r.buckets} buckets, ${r.rows} rows counted, total |drift| ${r.absDrift}, ${r.deferred} marks deferred`,
      );
    } finally {
      await rt.close();
    }
  },
} satisfies JobCommand;
