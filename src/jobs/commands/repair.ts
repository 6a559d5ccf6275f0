/**
 * `jobs repair --users 1,2 [--concurrency 8]`: re-folds and rewrites the pairs of the given users from their history
 * (`repair.ts`), a line per 100 pairs and a summary. Safe to re-run.
 */
import { parseArgs } from 'node:util';
import type { JobCommand } from '../job-command.js';
import { type OpenJobRuntime, parseUserIds } from '../runtime.js';

export const repairCommand = {
  name: 'repair',
  help: 're-fold and rewrite the pairs of the given users from their history (--users 1,2 [--concurrency 8])',
  async run(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
    const { values } = parseArgs({
      args: argv,
      options: { users: { type: 'string' }, concurrency: { type: 'string', default: '8' } },
    });
    const users = parseUserIds(values.users, 'usage: jobs repair --users 1,2,3 [--concurrency 8]');
    if (!/^[1-9]\d?$/.test(values.concurrency)) {
      console.error('usage: jobs repair --users 1,2,3 [--concurrency 8] (--concurrency from 1 to 99)');
      process.exit(2);
    }
    const concurrency = Number(values.concurrency);
    const { repairUsers } = await import('../repair.js');
    const rt = await openRuntime();
    try {
      const results = await repairUsers({ store: rt.store, lists: rt.lists }, users, {
        concurrency,
        onProgress: (done, total) => {
          if (done % 100 === 0 || done === total) console.log(`[repair] ${done}/${total} pairs`);
        },
      });
      console.log(`[repair] ${results.length} pairs re-folded and rewritten`);
    } finally {
      await rt.close();
    }
  },
} satisfies JobCommand;
