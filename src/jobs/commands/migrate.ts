/**
 * `jobs migrate` (`npm run migrate`): applies pending schema migrations. Opening a runtime is what
 * migrates (`services.ts` opens the keyspace through the migration runner), so the command only
 * opens one, says so and closes it.
 */
import type { JobCommand } from '../job-command.js';
import type { OpenJobRuntime } from '../runtime.js';

export const migrateCommand = {
  name: 'migrate',
  help: 'apply pending schema migrations',
  async run(_argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
    const rt = await openRuntime();
    console.log('[schema] up to date');
    await rt.close();
  },
} satisfies JobCommand;
