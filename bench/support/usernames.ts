/**
 * Realistic handles for bulk loads, deterministic per id: real handles share a few popular
 * prefixes (first names, "the", "real", "official"…), their lengths bunch around 8–12 with a long
 * tail to the 30-character limit, and they mix in digits, underscores and dots. Each handle ends
 * with the id in base 36, so handles are unique (case-insensitively too: lower case only) and a
 * load is reproducible. Prefix popularity is Zipf-like (rank r drawn with weight 1/r), so a search
 * by a popular prefix matches far more accounts than a rare one, as it would on a real service.
 */

/** Prefixes by popularity, most common first. */
const PREFIXES = [
  'the',
  'real',
  'its',
  'mr',
  'official',
  'john',
  'maria',
  'alex',
  'sam',
  'dan',
  'chris',
  'anna',
  'mike',
  'sara',
  'dj',
  'dr',
  'team',
  'mx',
  'lil',
  'big',
  'kim',
  'lee',
  'nguyen',
  'jose',
  'ali',
  'fatima',
  'chen',
  'wang',
  'priya',
  'raj',
  'olu',
  'ade',
  'yuki',
  'sora',
  'leo',
  'mia',
  'noah',
  'emma',
  'luca',
  'sofia',
  'ivan',
  'olga',
  'hans',
  'lena',
  'pablo',
  'ana',
  'omar',
  'zara',
  'kai',
  'nina',
  'tom',
  'ben',
  'max',
  'eva',
  'jay',
  'ray',
  'sky',
  'star',
  'moon',
  'sun',
  'code',
  'art',
  'music',
  'foto',
  'travel',
  'food',
  'fit',
  'game',
  'tech',
  'news',
  'daily',
  'just',
  'hey',
  'hi',
];
const WORDS = ['x', 'xo', 'fan', 'life', 'vibes', 'world', 'art', 'dev', 'tv', 'hq', 'og', 'pro', 'zone'];
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/** A small deterministic generator (xorshift32) seeded from the id. */
function rng(id: bigint): () => number {
  let x = Number(BigInt.asUintN(32, id * 2654435761n)) || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}

/** Cumulative weights 1/r of the prefixes (Zipf, s = 1). */
const CUMULATIVE = (() => {
  let sum = 0;
  return PREFIXES.map((_, r) => {
    sum += 1 / (r + 1);
    return sum;
  });
})();

/** The handle of account `id`: 3–30 of `[a-z0-9._]`, unique per id. */
export function usernameFor(id: bigint): string {
  const next = rng(id);
  const total = CUMULATIVE.at(-1) as number;
  const pick = next() * total;
  const prefix = PREFIXES[CUMULATIVE.findIndex((c) => c >= pick)] ?? 'user';
  const suffix = id.toString(36);
  // Target length: most 8–12, a tail to 30 (a sum of uniforms bunches in the middle).
  const target = Math.min(
    30,
    Math.max(
      prefix.length + suffix.length,
      Math.round(4 + 5 * (next() + next()) + (next() < 0.1 ? 12 * next() : 0)),
    ),
  );
  let body = prefix;
  const sep = () => (next() < 0.3 ? (next() < 0.5 ? '_' : '.') : '');
  while (body.length + suffix.length + 1 < target) {
    const r = next();
    body +=
      r < 0.4
        ? sep() + (WORDS[Math.floor(next() * WORDS.length)] as string)
        : r < 0.8
          ? LETTERS[Math.floor(next() * 26)]
          : String(Math.floor(next() * 10));
  }
  const handle = `${body}${next() < 0.5 ? '_' : ''}${suffix}`;
  return handle.length <= 30 ? handle : `${body.slice(0, 30 - suffix.length - 1)}_${suffix}`;
}
