import { timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import { PayloadTooLarge } from '@merx/kit';

/**
 * Script only from the console's own origin (no inline script, no eval), styles likewise, no
 * frames, forms only to itself, fetches only to itself. Nothing on a page can reach another site.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export function securityHeaders(ctx: Koa.Context): void {
  ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'same-origin');
  // Pages show the merchant's data and CSRF tokens: never stored by a shared cache or the browser's disk.
  ctx.set('Cache-Control', 'no-store');
}

const MAX_FORM_BYTES = 256 * 1024;

/** The submitted form, read once (bounded) and kept on the context for the CSRF check and the route. */
export async function formOf(ctx: Koa.Context): Promise<URLSearchParams> {
  const state = ctx.state as { form?: URLSearchParams };
  if (state.form) return state.form;
  let form = new URLSearchParams();
  if (ctx.is('application/x-www-form-urlencoded')) {
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_FORM_BYTES) throw new PayloadTooLarge(MAX_FORM_BYTES);
      chunks.push(chunk);
    }
    form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  }
  state.form = form;
  return form;
}

export function sameToken(presented: unknown, expected: string): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A browser names the page a POST came from; one from another origin is refused whatever it carries. */
export function fromOwnOrigin(ctx: Koa.Context, publicOrigin: string): boolean {
  const origin = ctx.get('origin');
  return origin === '' || origin === publicOrigin;
}
