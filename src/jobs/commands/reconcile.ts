/**
 * `jobs reconcile --users 1,2`: recounts whole lists of the given users and corrects their
 * counters (`reconcile.ts`), a line per list that held rows or drifted and a summary. Safe to
 * re-run.
 */
import { parseArgs } from 'node:util';
import type { JobCommand } from '../job-command.js';
import { type OpenJobRuntime, parseUserIds } from '../runtime.js';

export const reconcileCommand = {
  name: 'reconcile',
  help: 'recount whole lists of the given users and correct their counters (--users 1,2)',
  async run(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
    const { values } = parseArgs({ args: argv, options: { users: { type: 'string' } } });
    const users = parseUserIds(values.users, 'usage: jobs reconcile --users 1,2,3');
    const { reconcileUsers } = await import('../reconcile.js');
    const rt = await openRuntime();
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
  },
} satisfies JobCommand;
