/**
 * `jobs suggest [--top 100] [--limit-fanout N]`: computes friend-of-friend suggestions
 * (Adamic–Adar) for every user (`suggest.ts`), skipping hubs over the fan-out limit; a summary
 * with the scan and compute times.
 */
import { parseArgs } from 'node:util';
import type { JobCommand } from '../job-command.js';
import type { OpenJobRuntime } from '../runtime.js';

export const suggestCommand = {
  name: 'suggest',
  help: 'compute friend-of-friend suggestions (Adamic–Adar) for every user ([--top 100] [--limit-fanout N])',
  async run(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
    const { values } = parseArgs({
      args: argv,
      options: {
        top: { type: 'string', default: '100' },
        'limit-fanout': { type: 'string', default: '5000' },
      },
    });
    const ok = (v: string) => /^[1-9]\d{0,6}$/.test(v);
    if (!ok(values.top) || !ok(values['limit-fanout']) || Number(values.top) > 100) {
      console.error('usage: jobs suggest [--top 1..100] [--limit-fanout N]');
      process.exit(2);
    }
    const { runSuggestions } = await import('../suggest.js');
    const rt = await openRuntime();
    try {
      const r = await runSuggestions(rt.store, {
        top: Number(values.top),
        limitFanout: Number(values['limit-fanout']),
        log: (line) => console.log(`[suggest] ${line}`),
      });
      console.log(
        `[suggest] ${r.users} users, ${r.edges} follow edges, ${r.written} suggestion sets written, ${r.skippedHubs} hubs over the fan-out limit skipped; scan ${r.scanMs} ms, compute+write ${r.computeMs} ms`,
      );
    } finally {
      await rt.close();
    }
  },
} satisfies JobCommand;
