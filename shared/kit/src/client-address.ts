import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';
import { KeptValues } from './kept-values.js';

/** Which peers may say who the client is (in `X-Forwarded-For`); everyone else is the client. */
export type ProxyTrust = (address: string, hop: number) => boolean;

/**
 * What a backend service trusts by default: the service network (loopback, link-local and the
 * private ranges), where the gateway is. A caller from anywhere else is taken at its socket address.
 */
export const SERVICE_NETWORK = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * What a compiled trust decided, by the peer's address and `X-Forwarded-For`: the same few
 * pairs come again and again (the gateway, the load balancer, a client), and proxy-addr parses
 * every address of both on every request. Only for trusts made by proxyTrust, which depend on
 * nothing else; bounded, so a caller sending ever-new headers cannot grow it.
 */
const answers = new WeakMap<ProxyTrust, KeptValues<string, string>>();
const ANSWERS_KEPT = 1024;

/**
 * Compiles a list of addresses, CIDR ranges and proxy-addr's names (`loopback`, `linklocal`,
 * `uniquelocal`); throws a TypeError naming a bad entry. An empty list trusts nobody.
 */
export function proxyTrust(entries: readonly string[]): ProxyTrust {
  const trust = proxyaddr.compile([...entries]);
  answers.set(trust, new KeptValues(ANSWERS_KEPT));
  return trust;
}

/**
 * The client's address: the socket's peer, or, while that peer is a trusted proxy, the next
 * address back in `X-Forwarded-For` (read from the right, as each proxy appends).
 */
export function clientAddress(request: IncomingMessage, trust: ProxyTrust): string {
  const known = answers.get(trust);
  const peer = request.socket?.remoteAddress;
  if (!known || peer === undefined) return proxyaddr(request, trust);
  const key = `${peer} ${request.headers['x-forwarded-for'] ?? ''}`;
  return known.get(key, () => proxyaddr(request, trust));
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
