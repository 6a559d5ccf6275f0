import type { OpenJobRuntime } from './runtime.js';

/**
 * One command of the jobs CLI, declared as data: its name, its line in `jobs --help`, and what it
 * runs. The CLI entry (`src/cli.ts`) lists the commands; each lives in its own module under
 * `commands/`, which imports its job's code only when it runs, so `--help`, a usage error or
 * `token` load no job and open no connection.
 *
 * @example
 * export const reconcileDirtyCommand = {
 *   name: 'reconcile-dirty',
 *   help: 'one pass of the count reconciler',
 *   async run(_argv, openRuntime) { … },
 * } satisfies JobCommand;
 */
export interface JobCommand {
  /** What follows `jobs` on the command line, e.g. `repair-sweep`; unique in the CLI's table. */
  name: string;
  /** One line for `jobs --help`: what the command does and its options. */
  help: string;
  /**
   * Runs the command on its arguments (those after its name). Validates them before opening a
   * runtime, and on malformed ones prints the usage line and exits 2; opens at most one runtime
   * and closes it before returning. A thrown error is printed by the CLI, which exits 1.
   */
  run(argv: string[], openRuntime: OpenJobRuntime): void | Promise<void>;
}
