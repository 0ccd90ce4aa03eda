import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import { Unauthenticated } from './errors.js';

/**
 * Services call each other's internal routes (`/internal/v1/…`) with one shared credential from
 * configuration (MERX_SERVICE_TOKEN), sent as a bearer token. Being on the service network is not
 * enough: a pod or container that is not ours must not list revocations or overrides, and a route
 * added to the gateway by mistake still answers nothing without it.
 */
export const SERVICE_TOKEN_HEADER = 'authorization';

export function serviceAuthorization(token: string): Record<string, string> {
  return { [SERVICE_TOKEN_HEADER]: `Bearer ${token}` };
}

/** A fresh credential for a deployment of one process (the embedded mode) or a launcher to hand out. */
export function newServiceToken(): string {
  return randomBytes(32).toString('base64url');
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Refuses, with 401, any request that does not carry the service credential; compares in constant time. */
export function requireServiceCredential(token: string | undefined): Middleware {
  const expected = token ? digest(token) : undefined;
  return async function serviceCredentialOnly(ctx, next) {
    const presented = /^Bearer (.+)$/.exec(ctx.get(SERVICE_TOKEN_HEADER))?.[1];
    if (!expected || !presented || !timingSafeEqual(digest(presented), expected)) {
      throw new Unauthenticated('Internal routes need the service credential (MERX_SERVICE_TOKEN).');
    }
    await next();
  };
}
