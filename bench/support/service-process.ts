/**
 * The service as its clients run it: `node --import tsx src/main.ts` in a child process, with this
 * process's environment plus the bench's overrides (`PORT=0`, the keyspace, the secret, …), the
 * embedded worker and the reconciler as configured there (on by default). It is ready when it logs
 * its `listening` line (JSON, with `url`); every later line goes to `onLine` and the last ones are
 * kept for an error message. `stop()` sends SIGTERM (the service drains and exits) and SIGKILL
 * after a grace period; the service also exits on its own when this process dies
 * (`whenOrphaned` in `main.ts`).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A running service process. */
export interface ServiceProcess {
  pid: number;
  /** `http://127.0.0.1:<port>`, from its `listening` line. */
  url: string;
  /** The last lines it printed (stdout and stderr), oldest first. */
  lastLines(): string[];
  /** Its exit, once it exited: the code, or the signal that ended it. */
  exited(): { code: number | null; signal: string | null } | null;
  /** SIGTERM, then SIGKILL after `graceMs` (default 60 s); resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts `src/main.ts` with `env` laid over this process's environment and resolves once it
 * listens; rejects (the process killed) when it exits first or does not listen in `startTimeoutMs`.
 */
export function startServiceProcess(o: {
  env: Record<string, string>;
  startTimeoutMs?: number;
  /** Every line it prints after `listening` (and before), stdout and stderr. */
  onLine?: (line: string) => void;
  keepLines?: number;
  /** The script to run instead of `src/main.ts` (another server printing the same `listening` line). */
  script?: string;
  /** Node options before the script (`--cpu-prof`, which `NODE_OPTIONS` may not carry). */
  nodeArgs?: string[];
}): Promise<ServiceProcess> {
  const keep = o.keepLines ?? 200;
  const child = spawn(
    process.execPath,
    [...(o.nodeArgs ?? []), '--import', 'tsx', o.script ?? 'src/main.ts'],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, ...o.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const lines: string[] = [];
  let exit: { code: number | null; signal: string | null } | null = null;
  const exitedPromise = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      resolve();
    }),
  );
  let resolveUrl: (url: string) => void = () => undefined;
  const url = new Promise<string>((resolve) => {
    resolveUrl = resolve;
  });
  const reader = () => {
    let partial = '';
    return (chunk: Buffer) => {
      const parts = (partial + chunk.toString()).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        if (lines.length > keep) lines.shift();
        const m = /"url":"(http:\/\/[^"]+)"/.exec(line);
        if (m?.[1]) resolveUrl(m[1]);
        o.onLine?.(line);
      }
    };
  };
  child.stdout.on('data', reader());
  child.stderr.on('data', reader());
  const stop = async (graceMs = 60_000) => {
    if (exit) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exitedPromise;
    clearTimeout(timer);
  };
  return new Promise((resolve, reject) => {
    const fail = (why: string) => {
      void stop(1000);
      reject(new Error(`the service ${why}:\n${lines.slice(-30).join('\n')}`));
    };
    const timer = setTimeout(() => fail('did not listen in time'), o.startTimeoutMs ?? 120_000);
    void exitedPromise.then(() => {
      clearTimeout(timer);
      fail(`exited (${JSON.stringify(exit)}) before it listened`);
    });
    void url.then((u) => {
      clearTimeout(timer);
      resolve({
        pid: child.pid as number,
        url: u.replace('://0.0.0.0:', '://127.0.0.1:'),
        lastLines: () => [...lines],
        exited: () => exit,
        stop,
      });
    });
  });
}
