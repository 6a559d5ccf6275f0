/**
 * The list-table migration (cql 006–009) on the real node: a keyspace built at the previous schema
 * (cql 001–004 only), filled with edges of every relation in the previous shapes — lists of every
 * relation and direction, removed edges, a list grown to N = 4 and one mid-growth 2 → 4 by lowered
 * thresholds, cells with distinct write times — is migrated, once straight through and once
 * interrupted twice and resumed. Every list row and every inverse edge, with its write times, must
 * be the same set before and after; inverse edges must sit in exactly their layout's codes.
 */
import { copyFile, mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { bucketsForSize } from '../../../../src/lists/list-service.js';
import { bucketCodeOf, bucketOf, readBucketCodes, writeBucketCodes } from '../../../../src/model/buckets.js';
import type { BucketLayout, Direction, Relation } from '../../../../src/model/types.js';
import { RELATIONS } from '../../../../src/model/types.js';
import { createCqlClient, SCHEMA_CHANGE } from '../../../../src/store/cassandra/client.js';
import { CassandraGraphStore } from '../../../../src/store/cassandra/graph-store.js';
import type { CopyProgress } from '../../../../src/store/cassandra/migrations/data-step.js';
import { migrate } from '../../../../src/store/cassandra/migrations/migrate.js';
import { CQL_DIR, type TestKeyspace, testKeyspace } from '../../../support/cassandra.js';

const REPLICATION = { class: 'SimpleStrategy', replication_factor: 1 };
const THRESHOLDS = [10, 20, 40];

interface OldEdge {
  source: bigint;
  relation: Relation;
  target: bigint;
  active: boolean;
  position: bigint;
  createdAt: bigint;
  version: bigint;
}

/** A deterministic graph: every relation, removed edges, one celebrity with 30 followers. */
function dataset(base: bigint): OldEdge[] {
  let seed = 12345;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const users = Array.from({ length: 40 }, (_, i) => base + BigInt(i));
  const celebrity = users[0]!;
  const edges = new Map<string, OldEdge>();
  let position = 1_700_000_000_000_000n;
  const add = (source: bigint, relation: Relation, target: bigint, active: boolean) => {
    position += BigInt(1 + Math.floor(rand() * 1000));
    edges.set(`${source}|${relation}|${target}`, {
      source,
      relation,
      target,
      active,
      position,
      createdAt: position - BigInt(Math.floor(rand() * 100)),
      version: position * 1024n + BigInt(Math.floor(rand() * 10)),
    });
  };
  for (const fan of users.slice(1, 31)) add(fan, 'follows', celebrity, true);
  for (const fan of users.slice(31)) add(fan, 'follows', celebrity, false);
  // users[1] is blocked by 12 accounts: its `blocks in` list is the one caught mid-growth.
  for (const b of users.slice(2, 14)) add(b, 'blocks', users[1]!, true);
  for (let i = 0; i < 120; i++) {
    const s = users[Math.floor(rand() * users.length)]!;
    const t = users[Math.floor(rand() * users.length)]!;
    const r = RELATIONS[Math.floor(rand() * RELATIONS.length)]!;
    if (s !== t && !edges.has(`${s}|${r}|${t}`)) add(s, r, t, rand() < 0.75);
  }
  return [...edges.values()];
}

/** Layouts by the lowered thresholds; `users[1]`'s `blocks in` list is mid-growth 2 → 4. */
function layouts(edges: readonly OldEdge[], base: bigint): Map<string, BucketLayout> {
  const sizes = new Map<string, number>();
  for (const e of edges.filter((x) => x.active)) {
    for (const k of [`${e.source}|${e.relation}|out`, `${e.target}|${e.relation}|in`])
      sizes.set(k, (sizes.get(k) ?? 0) + 1);
  }
  const out = new Map<string, BucketLayout>();
  for (const [k, n] of sizes) {
    const buckets = bucketsForSize(n, THRESHOLDS);
    if (buckets > 1) out.set(k, { buckets, growingTo: null, copiedThrough: 0 });
  }
  out.set(`${base + 1n}|blocks|in`, { buckets: 2, growingTo: 4, copiedThrough: 1 });
  return out;
}

const layoutOf = (m: Map<string, BucketLayout>, user: bigint, relation: Relation, d: Direction) =>
  m.get(`${user}|${relation}|${d}`) ?? { buckets: 1, growingTo: null, copiedThrough: 0 };

/** Writes the dataset in the previous schema's shapes, as the previous version's store did. */
async function writeOldShapes(ks: TestKeyspace, keyspace: string, edges: readonly OldEdge[], base: bigint) {
  const c = ks.client;
  const lay = layouts(edges, base);
  for (const [k, l] of lay) {
    const [user, relation, direction] = k.split('|') as [string, Relation, Direction];
    await c.execute(
      `INSERT INTO ${keyspace}.list_layouts (user_id, relation, direction, buckets, growing_to, copied_through) VALUES (?, ?, ?, ?, ?, ?)`,
      [BigInt(user), relation, direction, l.buckets, l.growingTo, l.copiedThrough],
    );
  }
  const statements: [string, unknown[]][] = [];
  for (const [i, e] of edges.entries()) {
    const state = e.active ? 'active' : 'removed';
    const cells = [state, e.position, e.createdAt, e.version];
    statements.push([
      `INSERT INTO ${keyspace}.edges_out (source_id, relation, target_id, state, position, created_at) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`,
      [e.source, e.relation, e.target, ...cells],
    ]);
    statements.push([
      `INSERT INTO ${keyspace}.edges_in (target_id, relation, source_id, state, position, created_at) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`,
      [e.target, e.relation, e.source, ...cells],
    ]);
    if (i % 7 === 0) {
      statements.push([
        `UPDATE ${keyspace}.edges_in USING TIMESTAMP ? SET position = ? WHERE target_id = ? AND relation = ? AND source_id = ?`,
        [e.version + 3n, e.position, e.target, e.relation, e.source],
      ]);
    }
    if (!e.active) continue;
    for (const [table, d, owner, other] of [
      ['following', 'out', e.source, e.target],
      ['followers', 'in', e.target, e.source],
    ] as const) {
      const l = layoutOf(lay, owner, e.relation, d);
      // Mid-growth: rows sit in the old layout, and in the new one once their bucket was copied.
      const copied = l.growingTo !== null && bucketOf(other, l.buckets) < l.copiedThrough;
      const all = copied ? writeBucketCodes(l, other) : [bucketCodeOf(l.buckets, other)];
      for (const code of all) {
        statements.push([
          `INSERT INTO ${keyspace}.${table} (user_id, relation, bucket, created_at, other_id, position) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`,
          [owner, e.relation, code, e.createdAt, other, e.version, e.version],
        ]);
      }
    }
  }
  for (let i = 0; i < statements.length; i += 32) {
    await Promise.all(statements.slice(i, i + 32).map(([q, p]) => c.execute(q, p, { prepare: true })));
  }
  return lay;
}

/** Every list row, old shape: `direction user relation bucket created other position @writetime`. */
async function oldListRows(ks: TestKeyspace, keyspace: string): Promise<string[]> {
  const out: string[] = [];
  for (const [table, d] of [
    ['following', 'out'],
    ['followers', 'in'],
  ] as const) {
    const rs = await ks.client.execute(
      `SELECT user_id, relation, bucket, created_at, other_id, position, writetime(position) AS wt FROM ${keyspace}.${table}`,
      [],
      { fetchSize: 100_000 },
    );
    for (const r of rs.rows)
      out.push(
        `${d} ${r.user_id} ${r.relation} ${r.bucket} ${r.created_at} ${r.other_id} ${r.position} @${r.wt}`,
      );
  }
  return out.sort();
}

async function newListRows(ks: TestKeyspace, keyspace: string): Promise<string[]> {
  const out: string[] = [];
  for (const [table, d] of [
    ['following', 'out'],
    ['followers', 'in'],
  ] as const) {
    const rs = await ks.client.execute(
      `SELECT user_id, bucket, created_at, other_id, position, writetime(position) AS wt FROM ${keyspace}.${table}`,
      [],
      { fetchSize: 100_000 },
    );
    for (const r of rs.rows)
      out.push(`${d} ${r.user_id} follows ${r.bucket} ${r.created_at} ${r.other_id} ${r.position} @${r.wt}`);
  }
  const rs = await ks.client.execute(
    `SELECT user_id, relation, direction, bucket, created_at, other_id, position, writetime(position) AS wt FROM ${keyspace}.relation_lists`,
    [],
    { fetchSize: 100_000 },
  );
  for (const r of rs.rows) {
    expect(r.relation).not.toBe('follows');
    out.push(
      `${r.direction} ${r.user_id} ${r.relation} ${r.bucket} ${r.created_at} ${r.other_id} ${r.position} @${r.wt}`,
    );
  }
  return out.sort();
}

const inverseCells =
  'state, position, created_at, writetime(state) AS ws, writetime(position) AS wp, writetime(created_at) AS wc';

/** Every inverse edge: `target relation source state position created @ws/@wp/@wc` (with `bucket` when asked). */
async function inverseRows(ks: TestKeyspace, keyspace: string, bucketed: boolean): Promise<string[]> {
  const rs = await ks.client.execute(
    `SELECT target_id, relation, ${bucketed ? 'bucket, ' : ''}source_id, ${inverseCells} FROM ${keyspace}.edges_in`,
    [],
    { fetchSize: 100_000 },
  );
  return rs.rows
    .map(
      (r) =>
        `${r.target_id} ${r.relation} ${bucketed ? `b${r.bucket} ` : ''}${r.source_id} ${r.state} ${r.position} ${r.created_at} @${r.ws}/${r.wp}/${r.wc}`,
    )
    .sort();
}

/** The old inverse rows placed in their new buckets, as the migration must place them. */
function expectedBucketed(old: readonly string[], lay: Map<string, BucketLayout>): string[] {
  return old
    .flatMap((line) => {
      const [target, relation, source, ...rest] = line.split(' ') as [string, Relation, string, ...string[]];
      return writeBucketCodes(layoutOf(lay, BigInt(target), relation, 'in'), BigInt(source)).map(
        (code) => `${target} ${relation} b${code} ${source} ${rest.join(' ')}`,
      );
    })
    .sort();
}

async function oldSchemaKeyspace(label: string, base: bigint) {
  const dir = await mkdtemp(join(tmpdir(), 'cql-old-'));
  for (const f of (await readdir(CQL_DIR)).filter((x) => /^00[1-4]_/.test(x)))
    await copyFile(join(CQL_DIR, f), join(dir, f));
  const admin = await testKeyspace(label);
  const keyspace = `${admin.keyspace}_old`;
  await migrate(admin.client, keyspace, REPLICATION, dir);
  const edges = dataset(base);
  const lay = await writeOldShapes(admin, keyspace, edges, base);
  const before = {
    lists: await oldListRows(admin, keyspace),
    inverse: await inverseRows(admin, keyspace, false),
  };
  return { admin, keyspace, edges, lay, before };
}

describe('list-table migration from the previous schema', () => {
  const opened: TestKeyspace[] = [];
  const keyspaces: string[] = [];
  afterAll(async () => {
    for (const [i, ks] of opened.entries()) {
      await ks.client.execute(`DROP KEYSPACE IF EXISTS ${keyspaces[i]}`, [], SCHEMA_CHANGE);
      await ks.drop();
    }
  });

  async function assertMigrated(
    ks: TestKeyspace,
    keyspace: string,
    before: { lists: string[]; inverse: string[] },
    lay: Map<string, BucketLayout>,
  ) {
    expect(await newListRows(ks, keyspace)).toEqual(before.lists);
    const bucketed = await inverseRows(ks, keyspace, true);
    expect(bucketed).toEqual(expectedBucketed(before.inverse, lay));
    const tables = await ks.client.execute(
      'SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?',
      [keyspace],
    );
    expect(tables.rows.map((r) => r.table_name as string).filter((t) => t.startsWith('legacy_'))).toEqual([]);
  }

  it('keeps every list row and inverse edge (with write times), inverse edges in their layout codes', async () => {
    const { admin, keyspace, edges, lay, before } = await oldSchemaKeyspace('ltm_straight', 7_000n);
    const client = createCqlClient({
      ...inject('cassandra'),
      keyspace,
      consistency: 'localQuorum',
      requestTimeoutMs: 30_000,
    });
    const store = new CassandraGraphStore(client);
    opened.push(admin);
    keyspaces.push(keyspace);
    expect(before.lists.some((l) => l.startsWith('in ') && l.includes(' follows 4 '))).toBe(true);
    expect(before.inverse.length).toBe(edges.length);
    const progress: CopyProgress[] = [];
    const log: string[] = [];
    const r = await migrate(admin.client, keyspace, REPLICATION, CQL_DIR, (l) => log.push(l), {
      copyPageSize: 25,
      onProgress: (p) => {
        progress.push(p);
      },
    });
    const later = (await readdir(CQL_DIR)).filter((f) => f.endsWith('.cql') && !/^00[1-4]_/.test(f)).sort();
    expect(r.applied).toEqual(later);
    expect(later).toEqual(
      expect.arrayContaining(['006_list_tables_stage.cql', '009_list_tables_drop_stage.cql']),
    );
    await assertMigrated(admin, keyspace, before, lay);
    const finals = progress.filter((p) => p.done).map((p) => [p.copy, p.rows]);
    expect(finals).toEqual([
      ['following → legacy_following', before.lists.filter((l) => l.startsWith('out ')).length],
      ['followers → legacy_followers', before.lists.filter((l) => l.startsWith('in ')).length],
      ['edges_in → legacy_edges_in', edges.length],
      [
        'legacy_following → following / relation_lists',
        before.lists.filter((l) => l.startsWith('out ')).length,
      ],
      [
        'legacy_followers → followers / relation_lists',
        before.lists.filter((l) => l.startsWith('in ')).length,
      ],
      ['legacy_edges_in → edges_in', edges.length],
      // The deactivated-accounts registry's backfill (014) scans an empty users table here.
      ['users → deactivated_accounts', 0],
    ]);
    expect(log.some((l) => /legacy_edges_in → edges_in: \d+ rows \(done\), \d+ rows\/s/.test(l))).toBe(true);

    // Through the store: the celebrity's followers and a contains over its inverse buckets.
    const celeb = 7_000n;
    const list = { userId: celeb, relation: 'follows' as const, direction: 'in' as const };
    const layout = layoutOf(lay, celeb, 'follows', 'in');
    expect(layout.buckets).toBe(4);
    const fans = edges.filter((e) => e.relation === 'follows' && e.target === celeb && e.active);
    const members: bigint[] = [];
    for (const code of readBucketCodes(layout)) {
      for (const e of await store.listBucket(list, code, null, 1000)) members.push(e.otherId);
    }
    expect(members.sort()).toEqual(fans.map((e) => e.source).sort());
    const probe = edges.filter((e) => e.relation === 'follows' && e.target === celeb).map((e) => e.source);
    const found = await store.getEdgesIn(celeb, 'follows', probe, layout);
    expect([...found.values()].map((e) => `${e.sourceId} ${e.state} ${e.position}`).sort()).toEqual(
      edges
        .filter((e) => e.relation === 'follows' && e.target === celeb)
        .map((e) => `${e.source} ${e.active ? 'active' : 'removed'} ${e.position}`)
        .sort(),
    );
    await client.shutdown();
  });

  it('an interrupted migration (during the staging copy, then during the restore) resumes and counts each row once', async () => {
    const { admin, keyspace, edges, lay, before } = await oldSchemaKeyspace('ltm_resume', 8_000n);
    opened.push(admin);
    keyspaces.push(keyspace);
    const crash = new Error('crash');
    const progress: CopyProgress[] = [];
    const run = (crashAt: (p: CopyProgress) => boolean) =>
      migrate(admin.client, keyspace, REPLICATION, CQL_DIR, undefined, {
        copyPageSize: 20,
        onProgress: (p) => {
          progress.push(p);
          if (crashAt(p)) throw crash;
        },
      });
    await expect(run((p) => p.copy === 'followers → legacy_followers' && p.rows === 40)).rejects.toBe(crash);
    await expect(run((p) => p.copy === 'legacy_edges_in → edges_in' && p.rows === 60)).rejects.toBe(crash);
    const last = await run(() => false);
    // Everything from the interrupted restore (008) on, including files added after this migration.
    const rest = (await readdir(CQL_DIR)).filter((f) => /^\d{3}_[\w-]+\.cql$/.test(f) && f >= '008').sort();
    expect(last.applied).toEqual(rest);
    expect(rest.slice(0, 2)).toEqual(['008_list_tables_restore.cql', '009_list_tables_drop_stage.cql']);
    await assertMigrated(admin, keyspace, before, lay);
    const done = new Map(progress.filter((p) => p.done).map((p) => [p.copy, p.rows]));
    expect(done.get('edges_in → legacy_edges_in')).toBe(edges.length);
    expect(done.get('legacy_edges_in → edges_in')).toBe(edges.length);
    expect(done.get('followers → legacy_followers')).toBe(
      before.lists.filter((l) => l.startsWith('in ')).length,
    );
    // Resumed copies continued from their recorded page instead of starting over.
    const resumed = progress.filter((p) => p.copy === 'legacy_edges_in → edges_in').map((p) => p.rows);
    expect(resumed.slice(0, 4)).toEqual([20, 40, 60, 80]);
  });
});
