/**
 * `GET /docs`: Swagger UI for `/openapi.json`, with every asset served by this service.
 *
 * Design note — no CDN. `@hono/swagger-ui` points the page at a public CDN by default, so on a
 * network without internet access the page stays blank. The assets come instead from the
 * `swagger-ui-dist` package (pinned exactly in package.json) under
 * `/docs/assets/<version>/swagger-ui-dist/`: the version in the path lets browsers cache them for
 * good, and an upgrade changes the URL. (Not the CDN's `swagger-ui-dist@<version>` shape: with
 * hono 4.13's router a literal `@5.35.0` segment never matches and disturbs the other routes.) Files are read once, on first request, and kept in
 * memory (≈ 2 MB). The validator badge is switched off because it loads an image from
 * validator.swagger.io. Only the files the page references are served, never an arbitrary path.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { swaggerUI } from '@hono/swagger-ui';
import type { ApiApp } from './route-kit.js';

const require = createRequire(import.meta.url);
const DIST_DIR = dirname(require.resolve('swagger-ui-dist/package.json'));
const DIST_VERSION: string = (require('swagger-ui-dist/package.json') as { version: string }).version;

/** The files the page loads, with the content type each is served as. */
const ASSETS: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

/** URL prefix of the assets; `@hono/swagger-ui` appends `/swagger-ui-dist/<file>`. */
const ASSETS_BASE = `/docs/assets/${DIST_VERSION}`;

/**
 * Registers `GET /docs` (the page, loading `specUrl`) and `GET /docs/assets/…` (its script and
 * stylesheet) on `app`. Unknown asset names answer the app's 404.
 *
 * @example registerDocs(app, '/openapi.json')
 */
export function registerDocs(app: ApiApp, specUrl: string): void {
  const cache = new Map<string, Promise<Buffer>>();
  const load = (file: string): Promise<Buffer> => {
    let body = cache.get(file);
    if (!body) {
      body = readFile(join(DIST_DIR, file));
      body.catch(() => cache.delete(file));
      cache.set(file, body);
    }
    return body;
  };

  app.get(`${ASSETS_BASE}/swagger-ui-dist/:file`, async (c) => {
    const file = c.req.param('file');
    const type = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined;
    if (type === undefined) return c.notFound();
    return c.body(new Uint8Array(await load(file)), 200, {
      'Content-Type': type,
      'Cache-Control': 'public, max-age=31536000, immutable',
    });
  });
  app.get(
    '/docs',
    swaggerUI({
      url: specUrl,
      title: 'Flocklist API',
      baseUrl: ASSETS_BASE,
      validatorUrl: 'none',
    }),
  );
}
