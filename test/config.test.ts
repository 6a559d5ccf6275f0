/** The worker's part of the configuration: `WORKER_JOBS` over the defaults, and the refusals of a bad schedule. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

const jobs = (WORKER_JOBS?: string) => loadConfig(WORKER_JOBS === undefined ? {} : { WORKER_JOBS }).worker;

describe('worker config', () => {
  it('defaults: the list jobs hourly, the sweep daily (at 1,000 rows/s), the heavy and the in-service ones off, 720,000 store calls an hour per walk; embedded in npm start', () => {
    expect(jobs()).toEqual({
      embedded: true,
      port: 3001,
      jobs: [
        { name: 'split-search', everyMs: 3_600_000 },
        { name: 'split-buckets', everyMs: 3_600_000 },
        { name: 'repair-sweep', everyMs: 86_400_000 },
      ],
      leaseTtlMs: 30_000,
      backoffMs: 10_000,
      sweepRowsPerSecond: 1000,
      jobRequestsPerHour: 720_000,
      relay: undefined,
    });
    expect(loadConfig({ GRAPH_WORKER: 'off' }).worker.embedded).toBe(false);
    expect(() => loadConfig({ WORKER_JOB_REQUESTS_PER_HOUR: '59' })).toThrow(/WORKER_JOB_REQUESTS_PER_HOUR/);
    expect(loadConfig({ WORKER_JOB_REQUESTS_PER_HOUR: '0' }).worker.jobRequestsPerHour).toBe(0);
  });

  it('WORKER_JOBS lays periods over the defaults, in the defaults’ order; off removes a job', () => {
    expect(jobs('suggest=1d, split-search=off,repair-sweep=90m,reconcile-dirty=15s').jobs).toEqual([
      { name: 'split-buckets', everyMs: 3_600_000 },
      { name: 'repair-sweep', everyMs: 5_400_000 },
      { name: 'reconcile-dirty', everyMs: 15_000 },
      { name: 'suggest', everyMs: 86_400_000 },
    ]);
  });

  it('a bad schedule stops the start with a message naming it', () => {
    const refused = (v: string) => {
      try {
        jobs(v);
        return null;
      } catch (e) {
        return e instanceof ConfigError ? e.message : String(e);
      }
    };
    const names = 'split-search, split-buckets, repair-sweep, reconcile-dirty, index-search, suggest, relay';
    expect(['sweep=1h', 'split-search=5x', 'split-search', 'suggest=500ms', 'relay=1m'].map(refused)).toEqual(
      [
        `invalid configuration:\n  WORKER_JOBS: "sweep=1h": expected name=period with a name among ${names} and a period like 30s, 15m, 1h, 1d or off`,
        `invalid configuration:\n  WORKER_JOBS: "split-search=5x": expected name=period with a name among ${names} and a period like 30s, 15m, 1h, 1d or off`,
        `invalid configuration:\n  WORKER_JOBS: "split-search": expected name=period with a name among ${names} and a period like 30s, 15m, 1h, 1d or off`,
        'invalid configuration:\n  WORKER_JOBS: "suggest=500ms": a period is at least 1s',
        'invalid configuration:\n  WORKER_RELAY_BROKERS: required when WORKER_JOBS schedules relay (host:port, comma-separated)',
      ],
    );
  });

  it('the relay job: off by default; scheduled with its brokers, topic, name and page size', () => {
    expect(loadConfig({}).worker.relay).toBeUndefined();
    const c = loadConfig({
      WORKER_JOBS: 'relay=1m',
      WORKER_RELAY_BROKERS: 'k1:9092, k2:9092',
      WORKER_RELAY_TOPIC: 'graph.events',
      WORKER_RELAY_BATCH: '200',
    }).worker;
    expect([c.jobs.at(-1), c.relay]).toEqual([
      { name: 'relay', everyMs: 60_000 },
      { brokers: ['k1:9092', 'k2:9092'], topic: 'graph.events', name: 'relay', batch: 200 },
    ]);
    expect(() => loadConfig({ WORKER_RELAY_BROKERS: 'k1:9092', WORKER_RELAY_TOPIC: 'no spaces' })).toThrow(
      /WORKER_RELAY_TOPIC/,
    );
  });
});

describe('tracing config', () => {
  it('off without an endpoint; an endpoint and a ratio in 0..1 turn it on; anything else is refused', () => {
    expect(loadConfig({}).tracing).toEqual({ endpoint: undefined, sampleRatio: 0.01 });
    expect(
      loadConfig({
        GRAPH_TRACING_ENDPOINT: 'http://127.0.0.1:4318/v1/traces',
        GRAPH_TRACING_SAMPLE_RATIO: '1',
      }).tracing,
    ).toEqual({ endpoint: 'http://127.0.0.1:4318/v1/traces', sampleRatio: 1 });
    const refused = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return null;
      } catch (e) {
        return e instanceof ConfigError ? e.message.split('\n')[1]?.split(':')[0]?.trim() : String(e);
      }
    };
    expect([
      refused({ GRAPH_TRACING_ENDPOINT: 'not a url' }),
      refused({ GRAPH_TRACING_SAMPLE_RATIO: '1.5' }),
    ]).toEqual(['GRAPH_TRACING_ENDPOINT', 'GRAPH_TRACING_SAMPLE_RATIO']);
  });
});
