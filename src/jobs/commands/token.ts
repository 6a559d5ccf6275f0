/**
 * `jobs token --sub <id> [--admin] [--exp <seconds>]` (`npm run token -- --sub 42`): prints an
 * access token (`token.ts`) signed with `GRAPH_JWT_SECRET` from the config. Opens no runtime.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../../config.js';
import type { JobCommand } from '../job-command.js';
import { mintToken } from '../token.js';

export const tokenCommand = {
  name: 'token',
  help: 'mint an HS256 access token (--sub <id> [--admin] [--exp <s>])',
  /** Throws on a missing or malformed `--sub`, or an `--exp` under 1 (default 3600). */
  run(argv: string[]): void {
    const { values } = parseArgs({
      args: argv,
      options: {
        sub: { type: 'string' },
        admin: { type: 'boolean', default: false },
        exp: { type: 'string', default: '3600' },
      },
    });
    if (!values.sub || !/^[1-9][0-9]{0,18}$/.test(values.sub)) {
      throw new Error('usage: npm run token -- --sub <user id> [--admin] [--exp <seconds>]');
    }
    const exp = Number(values.exp);
    if (!Number.isInteger(exp) || exp < 1) throw new Error('--exp must be a positive integer of seconds');
    const config = loadConfig();
    process.stdout.write(
      `${mintToken({ sub: values.sub, admin: values.admin, expiresInSeconds: exp }, config.graph.jwtSecret)}\n`,
    );
  },
} satisfies JobCommand;
