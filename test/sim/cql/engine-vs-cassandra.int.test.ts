/**
 * The simulated node against the real one: the same seeded sequence of the store's own statements
 * (pair history appends, announcements, observations, clears, checkpoint commits with tied write
 * times, range deletions; list rows put and deleted at tied versions; edge rows), each with an
 * explicit client timestamp drawn from a few values so ties are frequent, is applied to both; after
 * every step the reads the store makes must return the same rows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Q } from '../../../src/store/cassandra/statements.js';
import { type TestKeyspace, testKeyspace } from '../../support/cassandra.js';
import { mulberry32 } from '../../support/random.js';
import { simSchema } from '../pair-sim.js';
import { CqlEngine } from './engine.js';
import { OLD } from './old-statements.js';

let ks: TestKeyspace;
beforeAll(async () => {
  ks = await testKeyspace('sim_engine');
});
afterAll(async () => {
  await ks?.drop();
});

const ROW =
  'INSERT INTO following (user_id, bucket, created_at, other_id, position) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?';
const DEL =
  'DELETE FROM following USING TIMESTAMP ? WHERE user_id = ? AND bucket = ? AND created_at = ? AND other_id = ?';

const READS: [string, unknown[]][] = [
  [OLD.pairStatic, [1n, 2n]],
  [OLD.pairOps, [1n, 2n, 0n]],
  [OLD.pairOps, [1n, 2n, 3n]],
  [
    'SELECT low_id, position, kind, cp_horizon, compact_seen FROM pair_ops WHERE low_id = ? AND high_id = ?',
    [1n, 2n],
  ],
  [
    'SELECT position, writetime(base) AS wt FROM pair_ops WHERE low_id = ? AND high_id = ? AND position > ?',
    [1n, 2n, 0n],
  ],
  [
    'SELECT created_at, other_id, position FROM following WHERE user_id = ? AND bucket = ? LIMIT ?',
    [7n, 1, 100],
  ],
  [
    'SELECT created_at, other_id FROM following WHERE user_id = ? AND bucket = ? AND (created_at, other_id) < (?, ?) LIMIT ?',
    [7n, 1, 3n, 2n, 100],
  ],
  [Q.getPair, [1n, ['follows', 'blocks'], 2n]],
];

describe('the simulated node agrees with Cassandra', () => {
  for (const seed of [1, 2, 3]) {
    it(`on seed ${seed}'s 120 statements`, async () => {
      console.log(`seed ${seed}`);
      const random = mulberry32(seed);
      const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)] as T;
      const engine = new CqlEngine(simSchema());
      // A fresh pair and list per seed (keys offset by the seed).
      const k = BigInt(seed) * 100n;
      const low = 1n + k;
      const high = 2n + k;
      const owner = 7n + k;
      const ts = () => pick([1_000, 1_001, 1_002, 1_003]);
      const position = () => BigInt(pick([1, 2, 3, 4, 5, 6]));
      const steps: [string, unknown[]][] = [];
      for (let i = 0; i < 120; i++) {
        const r = random();
        if (r < 0.25)
          steps.push([
            Q.appendOp,
            [
              low,
              high,
              position(),
              pick([low, high]),
              pick(['follow', 'block']),
              BigInt(pick([0, 1])),
              BigInt(pick([7, 9, 11])),
              BigInt(ts()),
            ],
          ]);
        else if (r < 0.33) steps.push([OLD.announce, [position(), BigInt(ts()), low, high]]);
        else if (r < 0.41) steps.push([OLD.observe, [BigInt(ts()), low, high]]);
        else if (r < 0.47) steps.push([OLD.clearAnnouncement, [low, high]]);
        else if (r < 0.55) {
          const h = position();
          steps.push([OLD.commitCheckpoint, [h, h, pick(['{"n":99}', '{"n":132}', '{"n":9}']), low, high]]);
        } else if (r < 0.6) steps.push([OLD.dropFolded, [low, high, position()]]);
        else if (r < 0.75)
          steps.push([ROW, [owner, 1, position(), BigInt(pick([1, 2])), position(), BigInt(ts())]]);
        else if (r < 0.85) steps.push([DEL, [BigInt(ts()), owner, 1, position(), BigInt(pick([1, 2]))]]);
        else
          steps.push([
            Q.putOut,
            [
              low,
              pick(['follows', 'blocks']),
              high,
              pick(['active', 'removed']),
              position(),
              position(),
              BigInt(ts()),
            ],
          ]);
      }
      let stmt = 0;
      for (const [query, params] of steps) {
        const at = ts();
        await ks.client.execute(query, params, { prepare: true, timestamp: at });
        engine.applyWrites(engine.bindWrite(query, params, BigInt(at), ++stmt), 0);
        for (const [rq, rp] of READS) {
          const p = rp.map((v) => (v === 1n ? low : v === 2n ? high : v === 7n ? owner : v));
          const real = (await ks.client.execute(rq, p, { prepare: true })).rows.map((row) => ({ ...row }));
          const sim = engine.select(rq, p, 0, { fetchSize: 5000 }).rows;
          expect({
            after: `${query} ${JSON.stringify(params, (_, v) => (typeof v === 'bigint' ? `${v}` : v))}`,
            read: rq,
            rows: sim,
          }).toEqual({
            after: `${query} ${JSON.stringify(params, (_, v) => (typeof v === 'bigint' ? `${v}` : v))}`,
            read: rq,
            rows: real,
          });
        }
      }
    });
  }
});
