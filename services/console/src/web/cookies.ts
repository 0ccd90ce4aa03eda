import type Koa from 'koa';
import type { Console } from './context.js';

/**
 * Every console cookie is HttpOnly and SameSite=Lax, and Secure unless the public URL is plain
 * http on localhost. Whether the browser's connection is TLS is a fact of the public URL, not of
 * the hop from the gateway (often plain http inside the cluster), so the configuration decides.
 */
export function setConsoleCookie(console: Console, ctx: Koa.Context, name: string, value: string, options: { path: string; maxAgeMs?: number }): void {
  (ctx.cookies as { secure?: boolean }).secure = console.secureCookies;
  ctx.cookies.set(name, value, {
    httpOnly: true,
    sameSite: 'lax',
    secure: console.secureCookies,
    path: options.path,
    overwrite: true,
    ...(options.maxAgeMs === undefined ? {} : { maxAge: options.maxAgeMs }),
  });
}

export const clearConsoleCookie = (console: Console, ctx: Koa.Context, name: string, path: string) =>
  setConsoleCookie(console, ctx, name, '', { path, maxAgeMs: 0 });
