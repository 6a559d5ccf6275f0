/**
 * The jobs CLI: `node dist/jobs/cli.js <command> [args]` (`npm run jobs`; `tsx src/jobs/cli.ts`
 * in development). A tiny dispatcher: add a command by adding one line to `COMMANDS` (modules are
 * imported lazily, so commands stay independent). As an entry point it is the one place the jobs
 * take the dev launcher from: with no contact points configured, a job starts or reuses the
 * local node.
 */
import { contactPointsOrLocalNode } from '../local-cassandra/node.js';
import type { OpenJobRuntime } from './runtime.js';

type Command = (argv: string[], openRuntime: OpenJobRuntime) => void | Promise<void>;

const openRuntime: OpenJobRuntime = async () => {
  const [{ loadConfig }, { openJobRuntime }] = await Promise.all([
    import('../config.js'),
    import('../services.js'),
  ]);
  return openJobRuntime(loadConfig(), contactPointsOrLocalNode);
};

const COMMANDS: Record<string, { help: string; load: () => Promise<Command> }> = {
  token: {
    help: 'mint an HS256 access token (--sub <id> [--admin] [--exp <s>])',
    load: async () => (await import('./token.js')).tokenCommand,
  },
  migrate: {
    help: 'apply pending schema migrations',
    load: async () => (await import('./commands.js')).migrateCommand,
  },
  reconcile: {
    help: 'recount whole lists of the given users and correct their counters (--users 1,2)',
    load: async () => (await import('./commands.js')).reconcileCommand,
  },
  'reconcile-dirty': {
    help: 'one pass of the count reconciler: recount only the list buckets writers marked dirty',
    load: async () => (await import('./commands.js')).reconcileDirtyCommand,
  },
  'repair-sweep': {
    help: 'sweep the whole graph by token range, report drift by kind and repair it ([--dry-run] [--rate N] [--resume])',
    load: async () => (await import('./commands.js')).repairSweepCommand,
  },
  suggest: {
    help: 'compute friend-of-friend suggestions (Adamic–Adar) for every user ([--top 100] [--limit-fanout N])',
    load: async () => (await import('./commands.js')).suggestCommand,
  },
  repair: {
    help: 're-fold and rewrite the pairs of the given users from their history (--users 1,2)',
    load: async () => (await import('./commands.js')).repairCommand,
  },
  'migrate-lists': {
    help: 'migrate hash-bucketed lists to time buckets, resumably (--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]',
    load: async () => (await import('./commands.js')).migrateListsCommand,
  },
  'migrate-counts': {
    help: 'recount every list with counts into the per-account count tables, resumably, then read counts from them (--all | --users 1,2) [--page N]',
    load: async () => (await import('./commands.js')).migrateCountsCommand,
  },
  'split-buckets': {
    help: 'split closed time buckets overfilled by old-time writes, resumably (--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]',
    load: async () => (await import('./split-buckets.js')).splitBucketsCommand,
  },
  'split-search': {
    help: 'split the search partitions of follows lists that outgrew the bound into name ranges, resumably (--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]',
    load: async () => (await import('./split-search.js')).splitSearchCommand,
  },
  'index-search': {
    help: 'write the search rows of follows lists written before search, resumably (--users 1,2 | --all) [--restart]',
    load: async () => (await import('./index-search.js')).indexSearchCommand,
  },
  relay: {
    help: 'relay the settled change feed to Kafka until stopped (--brokers HOST:PORT --topic graph-events [--name relay] [--batch N])',
    load: async () => (await import('./commands.js')).relayCommand,
  },
};

const [name, ...argv] = process.argv.slice(2);
if (name === '--help' || name === '-h' || name === 'help') {
  const width = Math.max(...Object.keys(COMMANDS).map((k) => k.length));
  console.log('usage: npm run jobs -- <command> [args]\n');
  for (const [k, c] of Object.entries(COMMANDS)) console.log(`  ${k.padEnd(width)}  ${c.help}`);
  process.exit(0);
}
const load = name === undefined ? undefined : COMMANDS[name]?.load;
if (!load) {
  console.error(`usage: jobs <${Object.keys(COMMANDS).join('|')}> [args]  (jobs --help for more)`);
  process.exit(2);
}
try {
  await (await load())(argv, openRuntime);
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
}
