/**
 * `jobs index-search (--users 1,2 | --all) [--restart]`: writes the search rows of follows lists
 * written before search (`index-search.ts`), a progress line per 10,000 rows and a summary;
 * re-run it to resume, `--restart` to start over.
 */
import { parseArgs } from 'node:util';
import type { JobCommand } from '../job-command.js';
import { type OpenJobRuntime, parseUserIds } from '../runtime.js';

const INDEX_SEARCH_USAGE = 'usage: jobs index-search (--users 1,2 | --all) [--restart]';

export const indexSearchCommand = {
  name: 'index-search',
  help: 'write the search rows of follows lists written before search, resumably (--users 1,2 | --all) [--restart]',
  async run(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
    const { values } = parseArgs({
      args: argv,
      options: {
        users: { type: 'string' },
        all: { type: 'boolean', default: false },
        restart: { type: 'boolean', default: false },
      },
    });
    if (values.all === (values.users !== undefined)) {
      console.error(INDEX_SEARCH_USAGE);
      process.exit(2);
    }
    const users = values.users === undefined ? undefined : parseUserIds(values.users, INDEX_SEARCH_USAGE);
    const { indexSearch } = await import('../index-search.js');
    const rt = await openRuntime();
    const started = performance.now();
    let printed = 0;
    try {
      const r = await indexSearch(rt.store, {
        ...(users ? { users } : {}),
        restart: values.restart,
        onProgress: (p) => {
          if (p.rows - printed < 10_000) return;
          printed = p.rows;
          const s = (performance.now() - started) / 1000;
          console.log(
            `[index-search] ${p.rows} rows of ${p.users} users done; at ${p.user} ${p.direction === 'in' ? 'followers' : 'following'} (${Math.round(p.rows / s)} rows/s)`,
          );
        },
      });
      console.log(`[index-search] done: ${r.rows} search rows for ${r.users} users`);
    } finally {
      await rt.close();
    }
  },
} satisfies JobCommand;
