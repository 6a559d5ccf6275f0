/**
 * A fenced lease: at most one holder of a name acts at a time, and one that lost the lease (paused
 * past its expiry, then taken over) writes nothing that stands.
 *
 * Design note. The row (`LeaseStore`) names the holder, its expiry by the holder's clock and a
 * generation raised by every takeover; every write after the take — renewals, the saved state — is
 * a lightweight transaction conditional on the taker's generation. That is the fence, and it needs
 * no clock: a holder SIGSTOPped past its expiry and taken over finds its next write refused
 * (`LeaseLostError`) and stops. Writes a job makes elsewhere that must not come from two holders
 * carry the generation too (in an LWT condition, or as the write time's high bits); writes that
 * are idempotent repairs (a recount, a split that resumes from its stored stage) need not.
 *
 * Between two fenced writes a holder relies on time: it treats the lease as held while its clock
 * is before `expires − S`, and another takes it only once its clock is past `expires + S`, where S
 * bounds each process's distance from the database's clock (the clock guard's bound), so any two
 * clocks are within 2S and the holder has stopped before a taker starts. A holder renews every
 * third of the TTL; a renewal that cannot reach the database leaves the expiry where it was, so a
 * holder cut off from the database stops at `expires − S` like a paused one.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Timers } from '../model/timers.js';
import { SYSTEM_TIMERS } from '../model/timers.js';
import type { LeaseRow, LeaseStore } from '../ports/lease-store.js';

/** A holder name for this process: host, pid and a random part (unique among the holders). */
export function newHolderName(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

/** This holder's lease is gone: taken over, released, or past its expiry by its own clock. */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

export interface LeaseOptions {
  store: LeaseStore;
  name: string;
  /** This process's name for itself, unique among the holders (host, pid and a random part). */
  holder: string;
  /** How long a take or a renewal holds. Default 30 s; renewed every third of it. */
  ttlMs?: number;
  /** S: how far this process's clock may be from the database's (the clock guard's bound). */
  clockBoundMs: number;
  timers?: Timers;
}

export class Lease {
  private expiresAtMs: number;
  private lost = false;
  private stopRenewing: (() => void) | null = null;
  private renewing: Promise<void> = Promise.resolve();
  private readonly controller = new AbortController();

  private constructor(
    private readonly o: Required<Omit<LeaseOptions, 'timers'>> & { timers: Timers },
    private readonly row: LeaseRow,
  ) {
    this.expiresAtMs = row.expiresAtMs;
  }

  /**
   * Takes the lease when no one holds it (never taken, released, or past its expiry + S by this
   * clock); returns null while another holds it or when another took it first. The new holder
   * renews it in the background until `release()` or its loss.
   *
   * @example
   * const lease = await Lease.acquire({ store, name: 'job:split-search', holder, clockBoundMs: 2000 });
   * if (lease) try { await work(lease); } finally { await lease.release(); }
   */
  static async acquire(options: LeaseOptions): Promise<Lease | null> {
    const o = { ttlMs: 30_000, timers: SYSTEM_TIMERS, ...options };
    const seen = await o.store.getLease(o.name);
    if (seen && seen.holder !== o.holder && o.timers.nowMs() < seen.expiresAtMs + o.clockBoundMs) return null;
    const { taken, row } = await o.store.takeLease(o.name, o.holder, o.timers.nowMs() + o.ttlMs, seen);
    if (!taken || !row || row.holder !== o.holder) return null;
    const lease = new Lease(o, row);
    lease.stopRenewing = o.timers.every(Math.max(1, Math.floor(o.ttlMs / 3)), () => {
      lease.renewing = lease.renew().catch(() => {});
    });
    return lease;
  }

  get name(): string {
    return this.o.name;
  }

  /** The generation this holder took: the fence its conditional writes carry. */
  get generation(): bigint {
    return this.row.generation;
  }

  /** What the previous holders saved last (`save`), as it stood when this holder took the lease. */
  get savedState(): string | null {
    return this.row.state;
  }

  /** Aborted when the lease is lost or released. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Whether this holder may still act: no write refused, and its clock before `expires − S`. */
  held(): boolean {
    if (!this.lost && this.o.timers.nowMs() >= this.expiresAtMs - this.o.clockBoundMs) this.lose();
    return !this.lost;
  }

  /** Throws `LeaseLostError` unless `held()`. */
  assertHeld(): void {
    if (!this.held()) throw new LeaseLostError(`lease ${this.o.name} (generation ${this.generation}) lost`);
  }

  /** Saves `state` in the lease row, fenced by the generation; throws `LeaseLostError` when refused. */
  async save(state: string): Promise<void> {
    this.assertHeld();
    const applied = await this.o.store.updateLease(this.o.name, this.generation, { state });
    if (!applied) {
      this.lose();
      this.assertHeld();
    }
  }

  /** Extends the expiry by the TTL from now, fenced; a refusal loses the lease. */
  async renew(): Promise<void> {
    if (!this.held()) return;
    const expiresAtMs = this.o.timers.nowMs() + this.o.ttlMs;
    const applied = await this.o.store.updateLease(this.o.name, this.generation, { expiresAtMs });
    if (!applied) this.lose();
    else if (!this.lost) this.expiresAtMs = expiresAtMs;
  }

  /** Stops renewing and gives the lease up (its expiry set to 0, fenced), so the next taker need not wait. */
  async release(): Promise<void> {
    const wasHeld = this.held();
    this.lose();
    await this.renewing; // a renewal in flight must not land after the release
    if (wasHeld)
      await this.o.store.updateLease(this.o.name, this.generation, { expiresAtMs: 0 }).catch(() => {});
  }

  private lose(): void {
    if (this.lost) return;
    this.lost = true;
    this.stopRenewing?.();
    this.stopRenewing = null;
    this.controller.abort(new LeaseLostError(`lease ${this.o.name} (generation ${this.generation}) lost`));
  }
}
