import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';

/** Which peers may say who the client is (in `X-Forwarded-For`); everyone else is the client. */
export type ProxyTrust = (address: string, hop: number) => boolean;

/**
 * What a backend service trusts by default: the service network (loopback, link-local and the
 * private ranges), where the gateway is. A caller from anywhere else is taken at its socket address.
 */
export const SERVICE_NETWORK = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * Compiles a list of addresses, CIDR ranges and proxy-addr's names (`loopback`, `linklocal`,
 * `uniquelocal`); throws a TypeError naming a bad entry. An empty list trusts nobody.
 */
export function proxyTrust(entries: readonly string[]): ProxyTrust {
  return proxyaddr.compile([...entries]);
}

/**
 * The client's address: the socket's peer, or, while that peer is a trusted proxy, the next
 * address back in `X-Forwarded-For` (read from the right, as each proxy appends).
 */
export function clientAddress(request: IncomingMessage, trust: ProxyTrust): string {
  return proxyaddr(request, trust);
}

/** Parses a comma-separated setting; used by configuration, so a bad entry stops the start. */
export function parseProxyList(value: string): string[] {
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
  proxyTrust(entries);
  return entries;
}
