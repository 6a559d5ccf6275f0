/**
 * `GET /docs` works without internet: every asset the page references is served by the service
 * itself, with the content type a browser needs under `X-Content-Type-Options: nosniff`, and no
 * URL in the page points at another host.
 */
import { describe, expect, it } from 'vitest';
import { buildTestApp, stubGraph } from './support/app.js';

const ORIGIN = 'http://localhost';

/** URLs the page loads: `src`/`href` attributes and quoted paths or URLs in inline scripts. */
function referencedUrls(html: string): string[] {
  const urls = new Set<string>();
  for (const m of html.matchAll(/\s(?:src|href)\s*=\s*["']([^"']+)["']/gi)) urls.add(m[1] as string);
  for (const script of html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/gi)) {
    for (const m of (script[1] as string).matchAll(/["'`]((?:https?:\/\/|\/)[^"'`\s]*)["'`]/g)) {
      urls.add(m[1] as string);
    }
  }
  return [...urls];
}

const EXPECTED_TYPE: [RegExp, string][] = [
  [/\.css$/, 'text/css; charset=utf-8'],
  [/\.m?js$/, 'text/javascript; charset=utf-8'],
  [/\.json$/, 'application/json; charset=utf-8'],
];

describe('GET /docs', () => {
  const { app } = buildTestApp({ graph: stubGraph() });

  it('references its script, stylesheet and the OpenAPI document on this service only', async () => {
    const res = await app.request('/docs');
    expect([res.status, res.headers.get('content-type')]).toEqual([200, 'text/html; charset=UTF-8']);
    const html = await res.text();
    const urls = referencedUrls(html).map((u) => new URL(u, `${ORIGIN}/docs`));
    expect(urls.map((u) => u.pathname.split('/').pop()).sort()).toEqual([
      'openapi.json',
      'swagger-ui-bundle.js',
      'swagger-ui.css',
    ]);
    expect(urls.filter((u) => u.origin !== ORIGIN).map(String)).toEqual([]);
    const absolute = [...html.matchAll(/https?:\/\/[^\s"'`<>)]+/gi)].map((m) => m[0]);
    expect(absolute.filter((u) => new URL(u).origin !== ORIGIN)).toEqual([]);
  });

  it('serves every referenced asset with 200, the right content type and a body', async () => {
    const html = await (await app.request('/docs')).text();
    for (const url of referencedUrls(html)) {
      const { pathname } = new URL(url, `${ORIGIN}/docs`);
      const res = await app.request(pathname);
      const body = new Uint8Array(await res.arrayBuffer());
      const type = EXPECTED_TYPE.find(([re]) => re.test(pathname))?.[1];
      expect({
        pathname,
        status: res.status,
        type: res.headers.get('content-type'),
        empty: body.length === 0,
      }).toEqual({ pathname, status: 200, type, empty: false });
    }
  });

  it('the stylesheet loads nothing more: every url(…) in it is an inline data: URI', async () => {
    const html = await (await app.request('/docs')).text();
    const css = referencedUrls(html).find((u) => u.endsWith('.css')) as string;
    const text = await (await app.request(new URL(css, `${ORIGIN}/docs`).pathname)).text();
    const urls = [...text.matchAll(/url\(\s*["']?([^"')]*)/gi)].map((m) => m[1] as string);
    expect(urls.length).toBeGreaterThan(0);
    expect(urls.filter((u) => !u.startsWith('data:'))).toEqual([]);
    expect(text.match(/@import/gi)).toBeNull();
  });

  it('serves only the files the page uses, not the rest of the package', async () => {
    const html = await (await app.request('/docs')).text();
    const css = referencedUrls(html).find((u) => u.endsWith('.css')) as string;
    const dir = css.slice(0, css.lastIndexOf('/') + 1);
    for (const file of ['package.json', 'index.html', '..%2Fpackage.json', 'swagger-ui.css.map']) {
      expect([file, (await app.request(`${dir}${file}`)).status]).toEqual([file, 404]);
    }
  });

  it('is absent, assets included, when docs are switched off', async () => {
    const urls = referencedUrls(await (await app.request('/docs')).text());
    const { app: noDocs } = buildTestApp({ graph: stubGraph(), docs: false });
    for (const url of ['/docs', ...urls.filter((u) => u.startsWith('/docs/'))]) {
      expect([url, (await noDocs.request(url)).status]).toEqual([url, 404]);
    }
    expect((await noDocs.request('/openapi.json')).status).toBe(200);
  });
});
