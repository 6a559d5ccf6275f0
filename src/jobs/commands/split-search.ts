/**
 * `jobs split-search (--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]`: cuts the search
 * partitions of follows lists that outgrew the bound into name ranges. The command's body lives
 * with its job (`split-search.ts`); this module declares it for the CLI.
 */
import type { JobCommand } from '../job-command.js';
import type { OpenJobRuntime } from '../runtime.js';

export const splitSearchCommand = {
  name: 'split-search',
  help: 'split the search partitions of follows lists that outgrew the bound into name ranges, resumably (--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]',
  async run(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
    await (await import('../split-search.js')).splitSearchCommand(argv, openRuntime);
  },
} satisfies JobCommand;
