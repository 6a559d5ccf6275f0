/**
 * `npm run migrate`, `npm run jobs -- reconcile --users 1,2` and `npm run jobs -- repair --users
 * 1,2`: the schema migration, the count reconciliation and the pair repair as commands, printing
 * progress as they go and a summary at the end. All are safe to re-run.
 */
import { parseArgs } from 'node:util';
import { reconcileUsers } from './reconcile.js';
import { reconcileDirty } from './reconcile-dirty.js';
import { repairUsers } from './repair.js';
import { openJobRuntime, parseUserIds } from './runtime.js';

export async function reconcileCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { users: { type: 'string' } } });
  const users = parseUserIds(values.users, 'usage: jobs reconcile --users 1,2,3');
  const rt = await openJobRuntime();
  try {
    const results = await reconcileUsers(rt.store, users, {
      onProgress: (done, total, r) => {
        if (r.counted > 0 || r.drift !== 0)
          console.log(
            `[reconcile] ${done}/${total} ${r.list.userId} ${r.list.relation}/${r.list.direction}: counted ${r.counted}, drift ${r.drift}`,
          );
      },
    });
    const drifted = results.filter((r) => r.drift !== 0);
    const total = drifted.reduce((s, r) => s + Math.abs(r.drift), 0);
    console.log(
      `[reconcile] ${results.length} lists, ${drifted.length} drifted, total |drift| ${total}, now exact`,
    );
  } finally {
    await rt.close();
  }
}

export async function reconcileDirtyCommand(): Promise<void> {
  const rt = await openJobRuntime();
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
}

export async function repairCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { users: { type: 'string' } } });
  const users = parseUserIds(values.users, 'usage: jobs repair --users 1,2,3');
  const rt = await openJobRuntime();
  try {
    const results = await repairUsers({ store: rt.store, lists: rt.lists }, users, {
      onProgress: (done, total) => {
        if (done % 100 === 0 || done === total) console.log(`[repair] ${done}/${total} pairs`);
      },
    });
    console.log(`[repair] ${results.length} pairs re-folded and rewritten`);
  } finally {
    await rt.close();
  }
}

export async function migrateCommand(): Promise<void> {
  const rt = await openJobRuntime();
  console.log('[schema] up to date');
  await rt.close();
}
