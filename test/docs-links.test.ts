/**
 * Relative links in `README.md` and `docs/**` lead somewhere: every `[text](path)` names a file or
 * folder of the repository, and every `#anchor` (into a markdown file, or alone: the same file)
 * names a heading of it, slugged as GitHub slugs headings. Links with a scheme (`https:`,
 * `mailto:`) are not checked; links inside fenced code blocks and inline code are not links.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');

/** GitHub's heading slug: lowercase, punctuation dropped (not `-` or `_`), each space a `-`. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\s_-]/gu, '').replace(/ /g, '-');
}

/** The text outside fenced code blocks and inline code spans. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Every anchor the headings of a markdown text produce, duplicates numbered as GitHub does. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of prose(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = slug(match[1] ?? '');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

interface Files {
  exists(path: string): boolean;
  read(path: string): string;
}

/** The relative links of `file` (a path from the repository root) that lead nowhere. */
function brokenLinks(file: string, files: Files): string[] {
  const broken: string[] = [];
  for (const match of prose(files.read(file)).matchAll(
    /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g,
  )) {
    const link = match[1] ?? '';
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
    const [path = '', anchor] = link.split('#', 2);
    const target = path === '' ? file : join(dirname(file), decodeURIComponent(path));
    if (target.startsWith('..') || !files.exists(target)) {
      broken.push(`${link} (no file ${target})`);
      continue;
    }
    if (anchor !== undefined && target.endsWith('.md') && !anchorsOf(files.read(target)).has(anchor)) {
      broken.push(`${link} (no heading #${anchor} in ${target})`);
    }
  }
  return broken;
}

const repository: Files = {
  exists: (path) => existsSync(join(ROOT, path)),
  read: (path) => readFileSync(join(ROOT, path), 'utf8'),
};

function markdownFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .map((name) => relative(ROOT, join(ROOT, 'docs', name)))
    .sort();
  return ['README.md', ...docs];
}

describe('docs links', () => {
  it('finds the README and the docs', () => {
    const files = markdownFiles();
    expect(files).toContain('README.md');
    expect(files).toContain('docs/benchmarks.md');
  });

  for (const file of markdownFiles()) {
    it(`${file}: every relative link leads to a file and a heading`, () => {
      expect(brokenLinks(file, repository)).toEqual([]);
    });
  }

  it('slugs headings as GitHub does', () => {
    expect(slug('Writes: last-writer-wins without lightweight transactions')).toBe(
      'writes-last-writer-wins-without-lightweight-transactions',
    );
    expect(slug('`GRAPH_CACHE_TTL_MS` and the bound (B + 2S)')).toBe(
      'graph_cache_ttl_ms-and-the-bound-b--2s',
    );
    expect([...anchorsOf('# A\n## A\n```\n# Not a heading\n```\n### A b!\n')]).toEqual(['a', 'a-1', 'a-b']);
  });

  it('reports a missing file, a missing heading and a link out of the repository, and nothing else', () => {
    const fixture: Record<string, string> = {
      'docs/a.md': [
        '# Top',
        '[ok](b.md#second) [ok](#top) [ok](../README.md) [web](https://example.com/x.md)',
        '[gone](missing.md) [no heading](b.md#third) [out](../../etc/passwd)',
        '`[code](nowhere.md)`',
        '```',
        '[fenced](nowhere.md)',
        '```',
      ].join('\n'),
      'docs/b.md': '# First\n## Second\n',
      'README.md': '# R\n',
    };
    const files: Files = {
      exists: (path) => path in fixture,
      read: (path) => fixture[path] ?? '',
    };
    expect(brokenLinks('docs/a.md', files)).toEqual([
      'missing.md (no file docs/missing.md)',
      'b.md#third (no heading #third in docs/b.md)',
      '../../etc/passwd (no file ../etc/passwd)',
    ]);
  });
});
