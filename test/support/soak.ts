/**
 * Soak sizes. `npm test` (and CI) runs the short sizes; `SOAK=1` (`npm run test:soak`, before a
 * release) runs the long ones `docs/testing.md` lists. A knob's own variable overrides both.
 */
export const SOAK = process.env.SOAK === '1';

export function knob(name: string, soak: number, short: number): number {
  const v = process.env[name];
  return v !== undefined ? Number(v) : SOAK ? soak : short;
}
