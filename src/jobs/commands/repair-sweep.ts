/**
 * `jobs repair-sweep [--dry-run] [--rate N] [--resume]`: sweeps the whole graph by token range,
 * reports drift by kind and repairs it (`repair-sweep.ts`), with a progress line (a bar on a TTY)
 * and up to 50 sample findings. `--ranges` and `--max-pages` bound a run (tests, trials).
 */
import { parseArgs } from 'node:util';
import type { JobCommand } from '../job-command.js';
import type { SweepProgressEvent } from '../repair-sweep.js';
import type { OpenJobRuntime } from '../runtime.js';

/** A progress line: a bar on a TTY (rewritten in place), plain lines every few seconds otherwise. */
function progressPrinter(label: string, line: (e: SweepProgressEvent) => string) {
  const tty = process.stdout.isTTY;
  let lastPlain = 0;
  let done = false;
  return {
    update(e: SweepProgressEvent) {
      const pct = Math.min(1, e.fraction);
      const eta = pct > 0 ? ((e.elapsedMs / pct - e.elapsedMs) / 1000).toFixed(0) : '?';
      const text = `${(pct * 100).toFixed(1)}% ${line(e)} ETA ${eta}s`;
      if (tty) {
        const width = 24;
        const bar = '#'.repeat(Math.round(pct * width)).padEnd(width, '.');
        process.stdout.write(`\r[${label}] [${bar}] ${text}\u001b[K`);
      } else if (!done && (e.elapsedMs - lastPlain >= 2000 || pct >= 1)) {
        done = pct >= 1;
        lastPlain = e.elapsedMs;
        console.log(`[${label}] ${text}`);
      }
    },
    end() {
      if (tty) process.stdout.write('\n');
    },
  };
}

export const repairSweepCommand = {
  name: 'repair-sweep',
  help: 'sweep the whole graph by token range, report drift by kind and repair it ([--dry-run] [--rate N] [--resume])',
  async run(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
    const { values } = parseArgs({
      args: argv,
      options: {
        'dry-run': { type: 'boolean', default: false },
        resume: { type: 'boolean', default: false },
        rate: { type: 'string' },
        ranges: { type: 'string' },
        'max-pages': { type: 'string' },
      },
    });
    const num = (v: string | undefined, name: string) => {
      if (v === undefined) return undefined;
      if (!/^[1-9]\d{0,9}$/.test(v)) {
        console.error(
          `usage: jobs repair-sweep [--dry-run] [--rate N] [--resume] (--${name} must be a positive integer)`,
        );
        process.exit(2);
      }
      return Number(v);
    };
    const rate = num(values.rate, 'rate');
    const ranges = num(values.ranges, 'ranges');
    const maxPages = num(values['max-pages'], 'max-pages');
    const { DRIFT_KINDS, repairSweep } = await import('../repair-sweep.js');
    const rt = await openRuntime();
    const progress = progressPrinter('repair-sweep', (e) => {
      const f = e.totals.findings;
      return `rows ${e.totals.rows}, findings ${DRIFT_KINDS.map((k) => `${k} ${f[k]}`).join(' ')}`;
    });
    try {
      const r = await repairSweep(
        { store: rt.store, lists: rt.lists },
        {
          dryRun: values['dry-run'],
          resume: values.resume,
          rate,
          ranges,
          maxPages,
          onProgress: (e) => progress.update(e),
        },
      );
      progress.end();
      for (const s of r.samples.slice(0, 50)) console.log(`[repair-sweep] ${s.kind}: ${s.what}`);
      console.log(
        `[repair-sweep] ${r.complete ? 'complete' : 'stopped (resume with --resume)'}${r.dryRun ? ' (dry run)' : ''}: ` +
          `${r.rows} rows, ${r.pages} pages; ${DRIFT_KINDS.map((k) => `${k} ${r.findings[k]}`).join(', ')}; ` +
          `${r.repairedPairs} pairs repaired, ${r.markedDirty} list buckets marked dirty for the reconciler`,
      );
    } finally {
      await rt.close();
    }
  },
} satisfies JobCommand;
