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

/**
 * The header (HTTP) and metadata key (gRPC) by which the gateway vouches that a call came through
 * it, carrying the service credential. The gateway applies each merchant's throttle classes; a
 * service's own port reached with a valid token but without it would skip them.
 */
export const GATEWAY_CREDENTIAL_HEADER = 'x-merx-gateway-credential';

const GATEWAY_ONLY = "This port serves the gateway only: send the request to Merx's public URL.";

/** Whether `presented` is the service credential, compared in constant time. */
export function isServiceCredential(expected: string, presented: string | undefined): boolean {
  return presented !== undefined && timingSafeEqual(digest(presented), digest(expected));
}

/**
 * Refuses, with 401, a call to the merchant or operator API (`/api/…`, `/admin/…`) that did not
 * come through the gateway. Without a credential (a service started alone, in its component
 * tests) nothing is refused. Health, the OAuth endpoints and the internal routes (which have
 * their own check) are left alone.
 */
export function requireGatewayCredential(token: string | undefined): Middleware {
  return async function gatewayOnly(ctx, next) {
    if (
      token &&
      (ctx.path.startsWith('/api/') || ctx.path.startsWith('/admin/')) &&
      !isServiceCredential(token, ctx.get(GATEWAY_CREDENTIAL_HEADER) || undefined)
    ) {
      throw new Unauthenticated(GATEWAY_ONLY);
    }
    await next();
  };
}

/** The same refusal for a gRPC call's metadata: undefined when the call may go on. */
export function gatewayCredentialRefusal(token: string | undefined, metadataValue: string | undefined): string | undefined {
  return token && !isServiceCredential(token, metadataValue) ? GATEWAY_ONLY : undefined;
}
