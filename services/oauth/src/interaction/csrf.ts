import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';

const COOKIE = 'merx_csrf';

/**
 * Double-submit, bound to the interaction: the hidden field is an HMAC of the interaction uid
 * and a random value kept in a SameSite=Strict, HttpOnly cookie. Another site can neither read
 * the cookie nor make the browser send it on a cross-site POST, so it cannot forge the field;
 * the HMAC key keeps replicas agreeing without shared state.
 */
export function createCsrf(secret: string, cookiePath: string) {
  const tokenFor = (uid: string, binding: string) => createHmac('sha256', secret).update(`${uid}.${binding}`).digest('base64url');
  return {
    /** For a page with a form: reuses the browser's binding or sets a new one. */
    issue(ctx: Koa.Context, uid: string): string {
      let binding = ctx.cookies.get(COOKIE);
      if (!binding || !/^[A-Za-z0-9_-]{43}$/.test(binding)) {
        binding = randomBytes(32).toString('base64url');
        ctx.cookies.set(COOKIE, binding, { httpOnly: true, sameSite: 'strict', path: cookiePath, secure: ctx.secure, overwrite: true });
      }
      return tokenFor(uid, binding);
    },
    verify(ctx: Koa.Context, uid: string, presented: unknown): boolean {
      const binding = ctx.cookies.get(COOKIE);
      if (!binding || typeof presented !== 'string') return false;
      const expected = Buffer.from(tokenFor(uid, binding));
      const actual = Buffer.from(presented);
      return actual.length === expected.length && timingSafeEqual(actual, expected);
    },
  };
}

export type Csrf = ReturnType<typeof createCsrf>;
