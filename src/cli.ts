/**
 * The jobs CLI: `node dist/cli.js <command> [args]` (`npm run jobs`; `tsx src/cli.ts` in
 * development). An entry point beside `main.ts`: it lists the commands (one module each under
 * `jobs/commands/`, declared as data) and hands each a way to open its runtime through the one
 * storage wiring (`services.ts`). It is the one place the jobs take the dev launcher from: with no
 * contact points configured, a job starts or reuses the local node. Add a command by adding its
 * module and one line to `COMMANDS`; the list's order is `--help`'s. The command modules import
 * their jobs only when they run, so `--help` and a usage error load no job and open no connection.
 */
import { indexSearchCommand } from './jobs/commands/index-search.js';
import { migrateCommand } from './jobs/commands/migrate.js';
import { migrateCountsCommand } from './jobs/commands/migrate-counts.js';
import { reconcileCommand } from './jobs/commands/reconcile.js';
import { reconcileDirtyCommand } from './jobs/commands/reconcile-dirty.js';
import { relayCommand } from './jobs/commands/relay.js';
import { repairCommand } from './jobs/commands/repair.js';
import { repairSweepCommand } from './jobs/commands/repair-sweep.js';
import { splitBucketsCommand } from './jobs/commands/split-buckets.js';
import { splitSearchCommand } from './jobs/commands/split-search.js';
import { suggestCommand } from './jobs/commands/suggest.js';
import { tokenCommand } from './jobs/commands/token.js';
import type { JobCommand } from './jobs/job-command.js';
import type { OpenJobRuntime } from './jobs/runtime.js';
import { contactPointsOrLocalNode } from './local-cassandra/node.js';

const openRuntime: OpenJobRuntime = async () => {
  const [{ loadConfig }, { openJobRuntime }] = await Promise.all([
    import('./config.js'),
    import('./services.js'),
  ]);
  return openJobRuntime(loadConfig(), contactPointsOrLocalNode);
};

const COMMANDS: readonly JobCommand[] = [
  tokenCommand,
  migrateCommand,
  reconcileCommand,
  reconcileDirtyCommand,
  repairSweepCommand,
  suggestCommand,
  repairCommand,
  migrateCountsCommand,
  splitBucketsCommand,
  splitSearchCommand,
  indexSearchCommand,
  relayCommand,
];

const [name, ...argv] = process.argv.slice(2);
if (name === '--help' || name === '-h' || name === 'help') {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  console.log('usage: npm run jobs -- <command> [args]\n');
  for (const c of COMMANDS) console.log(`  ${c.name.padEnd(width)}  ${c.help}`);
  process.exit(0);
}
const command = COMMANDS.find((c) => c.name === name);
if (!command) {
  console.error(`usage: jobs <${COMMANDS.map((c) => c.name).join('|')}> [args]  (jobs --help for more)`);
  process.exit(2);
}
try {
  await command.run(argv, openRuntime);
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
}
