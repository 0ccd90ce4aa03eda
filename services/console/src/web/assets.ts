import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type Koa from 'koa';
import type { AssetUrls } from './layout.js';

interface Asset {
  path: string;
  type: string;
  body: Buffer;
}

/** `services/console/assets`, beside `dist/`. */
const ASSETS_DIR = fileURLToPath(new URL('../../../assets/', import.meta.url));

/**
 * The stylesheet and the script are read once at start and served under content-hashed names
 * with a year-long immutable cache: a deploy changes the name, so nobody runs yesterday's code.
 * Nothing is fetched from anywhere else at run time.
 */
export function loadAssets(): { urls: AssetUrls; serve: Koa.Middleware } {
  const load = (file: string, type: string): Asset => {
    const body = readFileSync(`${ASSETS_DIR}${file}`);
    const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
    const [name, extension] = file.split('.');
    return { path: `/console/assets/${name}.${hash}.${extension}`, type, body };
  };
  const css = load('console.css', 'text/css; charset=utf-8');
  const js = load('console.js', 'text/javascript; charset=utf-8');
  const byPath = new Map([css, js].map((asset) => [asset.path, asset]));
  return {
    urls: { css: css.path, js: js.path },
    serve: async (ctx, next) => {
      const asset = byPath.get(ctx.path);
      if (!asset || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
      ctx.type = asset.type;
      ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.body = asset.body;
    },
  };
}
