/**
 * The feed's minute reads on the real node (`CassandraEventStore.readEventRows`): a minute's 8
 * shards in one statement when that read comes back short, shard by shard when it comes back full —
 * the same rows in key order either way, from any cursor and at any page size, pages of a minute
 * of 2,000 rows (10× a busy tail's poll) included; the index of minutes read only for minutes the
 * process does not know indexed yet. Statements counted by the store's `onQuery`.
 * Seeded: the rows' pairs and the cursors are drawn, and the seed printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nowPosition } from '../../../src/model/clock.js';
import { compareEventKeys, EVENT_PERIOD_MICROS, type EventRow } from '../../../src/model/events.js';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../../support/cassandra.js';
import { followKey } from '../../support/event-keys.js';
import { mulberry32 } from '../../support/random.js';

const SEED = Number(process.env.SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`[event-reads] seed ${SEED} (SEED=${SEED} replays it)`);
const random = mulberry32(SEED);

let ks: TestKeyspace;
let store: CassandraGraphStore;
const statements: string[] = [];
/** The start of a minute two minutes ago: every row below lands in that one period. */
const base = (nowPosition() / EVENT_PERIOD_MICROS - 2n) * EVENT_PERIOD_MICROS + 1_000n;
const until = base + 59_000_000n;
const reference: EventRow[] = [];
let nextId = 1_000_000n;

/** `n` rows of distinct pairs at drawn slots of the minute (shards as their pairs fall). */
async function writeRows(n: number): Promise<void> {
  const rows: EventRow[] = [];
  for (let i = 0; i < n; i++) {
    const low = nextId++;
    const high = nextId++;
    const slot = base + BigInt(Math.floor(random() * 58_000_000));
    rows.push({
      key: followKey(low, high, slot),
      transitions: [{ sourceId: low, relation: 'follows', targetId: high, on: true }],
    });
  }
  for (let i = 0; i < rows.length; i += 50) await store.writeEdges([], [], 10n, rows.slice(i, i + 50));
  reference.push(...rows);
  reference.sort((a, b) => compareEventKeys(a.key, b.key));
}

/** A read's rows and the `readEvents` statements it sent. */
async function read(after: EventRow | null, limit: number) {
  statements.length = 0;
  const rows = await store.readEventRows(after ? after.key : null, until, limit);
  return { rows, reads: statements.filter((s) => s === 'readEvents').length };
}

beforeAll(async () => {
  ks = await testKeyspace('event_reads');
  store = new CassandraGraphStore(ks.client, { onQuery: (name) => statements.push(name) });
});

afterAll(async () => {
  await ks?.drop();
});

describe('a minute of the feed read from the real node', () => {
  it('40 rows: one statement for the minute, from the start, after a cursor, and a page of 7', async () => {
    await writeRows(40);
    expect(await read(null, 1000)).toEqual({ rows: reference, reads: 1 });
    const at = Math.floor(random() * 39);
    expect(await read(reference[at] as EventRow, 1000)).toEqual({ rows: reference.slice(at + 1), reads: 1 });
    expect(await read(null, 7)).toEqual({ rows: reference.slice(0, 7), reads: 1 });
  });

  it('200 rows, pages of 50: the one read comes back full, so shard by shard; the same rows', async () => {
    await writeRows(160);
    const page = await read(null, 50);
    expect(page.rows).toEqual(reference.slice(0, 50));
    expect(page.reads).toBeGreaterThan(1);
  });

  it('2,000 rows read in pages of 1, 37 and 1,000 from drawn cursors: every page is the reference from its cursor', async () => {
    await writeRows(1_800);
    expect(reference).toHaveLength(2_000);
    for (const limit of [1, 37, 1_000]) {
      for (let n = 0; n < 5; n++) {
        const at = Math.floor(random() * reference.length);
        const page = await read(reference[at] as EventRow, limit);
        expect(page.rows).toEqual(reference.slice(at + 1, at + 1 + limit));
      }
    }
    // The whole minute in pages of 1,000: the reference, in order.
    const all: EventRow[] = [];
    let after: EventRow | null = null;
    for (;;) {
      const page = await read(after, 1_000);
      all.push(...page.rows);
      if (page.rows.length < 1_000) break;
      after = page.rows.at(-1) as EventRow;
    }
    expect(all).toEqual(reference);
  });

  it('a range within minutes the process knows indexed reads no index; one reaching past them reads it', async () => {
    // A process that has written nothing: it learns the minute from the index once.
    const fresh = new CassandraGraphStore(ks.client, { onQuery: (name) => statements.push(name) });
    const first = reference[0] as EventRow;
    const readFrom = async (to: bigint) => {
      statements.length = 0;
      const rows = await fresh.readEventRows(first.key, to, 5_000);
      return {
        rows: rows.length,
        index: statements.filter((s) => s === 'listEventPeriods').length,
        reads: statements.filter((s) => s === 'readEvents').length,
      };
    };
    expect(await readFrom(until)).toEqual({ rows: reference.length - 1, index: 1, reads: 1 });
    expect(await readFrom(until)).toEqual({ rows: reference.length - 1, index: 0, reads: 1 });
    // The next minute holds no rows, so it is not indexed: the index is read again.
    expect(await readFrom(until + EVENT_PERIOD_MICROS)).toEqual({
      rows: reference.length - 1,
      index: 1,
      reads: 1,
    });
  });
});
