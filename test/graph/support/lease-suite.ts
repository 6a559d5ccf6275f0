/**
 * The lease's contract (`src/graph/lease.ts`) on any `LeaseStore`: one holder at a time, a
 * takeover only past expiry + S by the taker's clock, a generation per take, and every write of
 * a holder that lost the lease refused. Clocks are virtual (each holder its own), renewals run by
 * hand, so the cases are exact on the real node as in memory.
 */
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { Lease, LeaseLostError } from '../../../src/graph/lease.js';
import type { Timers } from '../../../src/model/timers.js';
import type { LeaseStore } from '../../../src/ports/lease-store.js';

/** A clock set by hand; `every` registers nothing (the tests renew by hand). */
export function manualClock(startMs: number): Timers & { set(ms: number): void } {
  let now = startMs;
  return {
    nowMs: () => now,
    every: () => () => {},
    after: () => () => {},
    sleep: async (ms) => {
      now += ms;
    },
    set(ms) {
      now = ms;
    },
  };
}

const S = 2000;
const TTL = 30_000;
const T0 = 1_800_000_000_000;

export function leaseSuite(make: () => LeaseStore) {
  const fresh = () => ({ store: make(), name: `job:${randomBytes(4).toString('hex')}` });
  const take = (store: LeaseStore, name: string, holder: string, timers: Timers) =>
    Lease.acquire({ store, name, holder, ttlMs: TTL, clockBoundMs: S, timers });

  it('one holder at a time: the first take is generation 1; another is refused until expiry + S by its clock, then takes generation 2 and keeps the saved state', async () => {
    const { store, name } = fresh();
    const [ca, cb] = [manualClock(T0), manualClock(T0)];
    const a = await take(store, name, 'a', ca);
    expect([a?.generation, a?.savedState, a?.held()]).toEqual([1n, null, true]);
    await a!.save('{"position":7}');
    expect(await take(store, name, 'b', cb)).toBeNull();
    cb.set(T0 + TTL + S - 1);
    expect(await take(store, name, 'b', cb)).toBeNull();
    cb.set(T0 + TTL + S);
    const b = await take(store, name, 'b', cb);
    expect([b?.generation, b?.savedState]).toEqual([2n, '{"position":7}']);
    expect(await store.getLease(name)).toEqual({
      name,
      holder: 'b',
      generation: 2n,
      expiresAtMs: T0 + TTL + S + TTL,
      state: '{"position":7}',
    });
  });

  it('a holder paused past its expiry and taken over: its save and renewal are refused (LeaseLostError), what the new holder saved stands', async () => {
    const { store, name } = fresh();
    const [ca, cb] = [manualClock(T0), manualClock(T0 + TTL + S)];
    const a = (await take(store, name, 'a', ca))!;
    const b = (await take(store, name, 'b', cb))!;
    await b.save('b1');
    // a's clock never moved (a paused process): it still believes it holds the lease.
    expect(a.held()).toBe(true);
    await expect(a.save('a1')).rejects.toBeInstanceOf(LeaseLostError);
    expect([a.held(), a.signal.aborted]).toEqual([false, true]);
    await a.renew();
    await a.release();
    expect(await store.getLease(name)).toEqual({
      name,
      holder: 'b',
      generation: 2n,
      expiresAtMs: T0 + TTL + S + TTL,
      state: 'b1',
    });
  });

  it('a holder stops at expiry − S by its own clock unless renewed; a renewal moves the expiry; a release lets the next take at once', async () => {
    const { store, name } = fresh();
    const ca = manualClock(T0);
    const a = (await take(store, name, 'a', ca))!;
    ca.set(T0 + 10_000);
    await a.renew();
    expect((await store.getLease(name))?.expiresAtMs).toBe(T0 + 10_000 + TTL);
    ca.set(T0 + 10_000 + TTL - S - 1);
    expect(a.held()).toBe(true);
    ca.set(T0 + 10_000 + TTL - S);
    expect(a.held()).toBe(false);
    await expect(a.save('late')).rejects.toBeInstanceOf(LeaseLostError);
    const cb = manualClock(T0 + 10_000 + TTL + S);
    const b = (await take(store, name, 'b', cb))!;
    expect(b.generation).toBe(2n);
    await b.release();
    const c = await take(store, name, 'c', manualClock(T0 + 10_000 + TTL + S));
    expect([c?.generation, (await store.getLease(name))?.holder]).toEqual([3n, 'c']);
  });

  it('holders racing for a free lease: exactly one takes it', async () => {
    const { store, name } = fresh();
    const takers = await Promise.all(
      ['a', 'b', 'c', 'd', 'e'].map((h) => take(store, name, h, manualClock(T0))),
    );
    const won = takers.filter((l): l is Lease => l !== null);
    expect(won.map((l) => l.generation)).toEqual([1n]);
    expect((await store.getLease(name))?.holder).toBe(['a', 'b', 'c', 'd', 'e'][takers.indexOf(won[0]!)]);
  });
}
