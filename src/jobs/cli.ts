/**
 * The jobs CLI: `tsx src/jobs/cli.ts <command> [args]`. A tiny dispatcher: add a command by
 * adding one line to `COMMANDS` (modules are imported lazily, so commands stay independent).
 */
type Command = (argv: string[]) => void | Promise<void>;

const COMMANDS: Record<string, () => Promise<Command>> = {
  token: async () => (await import('./token.js')).tokenCommand,
  migrate: async () => (await import('./commands.js')).migrateCommand,
  reconcile: async () => (await import('./commands.js')).reconcileCommand,
  repair: async () => (await import('./commands.js')).repairCommand,
};

const [name, ...argv] = process.argv.slice(2);
const load = name === undefined ? undefined : COMMANDS[name];
if (!load) {
  console.error(`usage: jobs <${Object.keys(COMMANDS).join('|')}> [args]`);
  process.exit(2);
}
try {
  await (await load())(argv);
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
}
