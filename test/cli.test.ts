/** `npm run jobs -- --help` lists every job, one line each, and an unknown job is a usage error. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const CLI = ['--import', 'tsx', 'src/cli.ts'];

it('--help lists every job with one line each', async () => {
  const { stdout } = await run(process.execPath, [...CLI, '--help']);
  const jobs = stdout
    .split('\n')
    .filter((l) => l.startsWith('  '))
    .map((l) => l.trim().split(/\s+/)[0]);
  expect(jobs).toEqual([
    'token',
    'migrate',
    'reconcile',
    'reconcile-dirty',
    'repair-sweep',
    'suggest',
    'repair',
    'migrate-counts',
    'split-buckets',
    'split-search',
    'index-search',
    'relay',
  ]);
});

it('an unknown job and bad options are usage errors (exit 2), before any connection', async () => {
  const fail = async (args: string[]) => {
    try {
      await run(process.execPath, [...CLI, ...args]);
      return null;
    } catch (e) {
      const err = e as { code: number; stderr: string };
      return [err.code, err.stderr.trim().split('\n')[0]];
    }
  };
  expect(await fail(['nope'])).toEqual([
    2,
    'usage: jobs <token|migrate|reconcile|reconcile-dirty|repair-sweep|suggest|repair|migrate-counts|split-buckets|split-search|index-search|relay> [args]  (jobs --help for more)',
  ]);
  expect(await fail(['suggest', '--top', '101'])).toEqual([
    2,
    'usage: jobs suggest [--top 1..100] [--limit-fanout N]',
  ]);
  for (const bad of [
    [],
    ['--topic', 'graph-events'],
    ['--brokers', 'h:1', '--topic', 'a b'],
    ['--brokers', 'h:1', '--topic', 't', '--batch', '1001'],
  ]) {
    expect(await fail(['relay', ...bad])).toEqual([
      2,
      'usage: jobs relay --brokers HOST:PORT[,HOST:PORT] --topic NAME [--name relay] [--batch 1..1000] [--until-idle]',
    ]);
  }
  for (const bad of [
    [],
    ['--all', '--users', '1'],
    ['--all', '--bucket-rows', '0'],
    ['--all', '--settle-ms', '0'],
    ['--users', 'x'],
  ]) {
    expect(await fail(['split-buckets', ...bad])).toEqual([
      2,
      'usage: jobs split-buckets (--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]',
    ]);
  }
  for (const bad of [[], ['--all', '--users', '1'], ['--all', '--bucket-rows', '0'], ['--users', 'x']]) {
    expect(await fail(['split-search', ...bad])).toEqual([
      2,
      'usage: jobs split-search (--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]',
    ]);
  }
  for (const bad of [[], ['--all', '--users', '1'], ['--all', '--page', '0'], ['--users', 'x']]) {
    expect(await fail(['migrate-counts', ...bad])).toEqual([
      2,
      'usage: jobs migrate-counts (--all | --users 1,2) [--page N]',
    ]);
  }
  for (const bad of [[], ['--all', '--users', '1'], ['--users', 'x']]) {
    expect(await fail(['index-search', ...bad])).toEqual([
      2,
      'usage: jobs index-search (--users 1,2 | --all) [--restart]',
    ]);
  }
  expect(await fail(['repair-sweep', '--rate', '0'])).toEqual([
    2,
    'usage: jobs repair-sweep [--dry-run] [--rate N] [--resume] (--rate must be a positive integer)',
  ]);
});
