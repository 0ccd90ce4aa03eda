import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Middleware } from 'koa';
import { ConfigError } from '@merx/kit';

/**
 * The API reference at /docs: Redoc's standalone bundle, served by the gateway from
 * node_modules, rendering /api/v1/openapi.json. Nothing is fetched from another origin: the
 * script is ours, the page has no inline script (Redoc starts itself on the <redoc> element) and
 * the Content-Security-Policy lets the page talk to this origin only.
 *
 * Redoc loads exactly one thing from elsewhere and has no option to stop it: Redocly's logo in
 * the menu footer, from its CDN. The served copy points that image at an empty data: URL instead
 * (Redoc hides an image that fails to load), and start-up fails if the URL is not found exactly
 * once, so a Redoc upgrade that moves or adds one is noticed here rather than in a browser.
 */

const REDOC_BUNDLE = 'redoc/bundles/redoc.standalone.js';
export const API_REFERENCE_PATH = '/docs';
const SPEC_URL = '/api/v1/openapi.json';
const REDOCLY_LOGO_URL = '"https://cdn.redoc.ly/redoc/logo-mini.svg"';

/**
 * Redoc injects its styles as <style> elements (styled-components) and builds its search index in
 * a worker made from a blob: URL; nothing else needs more than 'self'.
 */
export const API_REFERENCE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface ApiReference {
  /** Versioned by content, so it can be cached for a year and a new Redoc gets a new URL. */
  scriptPath: string;
  script: Buffer;
  html: string;
}

/** Reads the renderer once, at start-up (from node_modules unless a path is given); a missing bundle stops the process with one line (exit 78) before it opens a port. */
export function loadApiReference(bundlePath?: string): ApiReference {
  let bundle: string;
  try {
    bundle = readFileSync(bundlePath ?? createRequire(import.meta.url).resolve(REDOC_BUNDLE), 'utf8');
  } catch (error) {
    throw new ConfigError('gateway', [`the API reference renderer ${REDOC_BUNDLE} is missing (${(error as Error).message.split('\n')[0]}); run npm ci`]);
  }
  const logos = bundle.split(REDOCLY_LOGO_URL).length - 1;
  if (logos !== 1)
    throw new ConfigError('gateway', [
      `${REDOC_BUNDLE} names Redocly's CDN logo ${logos} times instead of once; check the bundle for requests to other origins`,
    ]);
  const script = Buffer.from(bundle.replace(REDOCLY_LOGO_URL, '"data:,"'), 'utf8');
  const digest = createHash('sha256').update(script).digest('hex').slice(0, 16);
  const scriptPath = `${API_REFERENCE_PATH}/assets/redoc.standalone.${digest}.js`;
  return { scriptPath, script, html: referencePage(scriptPath) };
}

function referencePage(scriptPath: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Merx API reference</title>
<link rel="icon" href="data:,">
</head>
<body>
<redoc spec-url="${SPEC_URL}" expand-responses="200,201,202" json-sample-expand-level="3" path-in-middle-panel="true"></redoc>
<script src="${scriptPath}"></script>
</body>
</html>
`;
}

/** Public and unthrottled like the document itself: GET and HEAD of the page and of its script. */
export function apiReferenceRoutes(reference: ApiReference): Middleware {
  return async function serveApiReference(ctx, next) {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    const common = { 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer', 'Cross-Origin-Resource-Policy': 'same-origin' };
    if (ctx.path === API_REFERENCE_PATH || ctx.path === `${API_REFERENCE_PATH}/`) {
      ctx.set({ ...common, 'Content-Security-Policy': API_REFERENCE_CSP, 'Cache-Control': 'no-cache' });
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = reference.html;
      return;
    }
    if (ctx.path === reference.scriptPath) {
      ctx.set({ ...common, 'Cache-Control': 'public, max-age=31536000, immutable' });
      ctx.type = 'text/javascript; charset=utf-8';
      ctx.body = reference.script;
      return;
    }
    return next();
  };
}
