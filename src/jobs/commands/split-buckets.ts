/**
 * `jobs split-buckets (--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]`: splits closed time
 * buckets overfilled by old-time writes. The command's body lives with its job
 * (`split-buckets.ts`); this module declares it for the CLI.
 */
import type { JobCommand } from '../job-command.js';
import type { OpenJobRuntime } from '../runtime.js';

export const splitBucketsCommand = {
  name: 'split-buckets',
  help: 'split closed time buckets overfilled by old-time writes, resumably (--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]',
  async run(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
    await (await import('../split-buckets.js')).splitBucketsCommand(argv, openRuntime);
  },
} satisfies JobCommand;
