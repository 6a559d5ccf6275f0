/**
 * The seeded PRNG of the tests and benches (mulberry32): small, fast, and the same sequence for the
 * same seed on every run and machine, so a printed seed replays a random test, a simulation
 * schedule or a generated bench graph exactly. Not for anything secret.
 *
 * It lives in `test/support/` (benches import it from here, as they already import the list
 * fixtures): the tests must not depend on `bench/`, which is optional tooling.
 */

/**
 * A generator of uniform numbers in [0, 1) from a 32-bit seed.
 *
 * @example const random = mulberry32(42); random(); // 0.6011037519201636, on every run
 */
export function mulberry32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
