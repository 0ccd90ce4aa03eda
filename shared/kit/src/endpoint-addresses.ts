import dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { FieldError } from './errors.js';

/**
 * SSRF policy. A webhook URL is chosen by a merchant, so without this a subscription could make
 * the delivery workers POST into our own network (metadata services, databases, admin ports).
 * Addresses are checked twice: when the URL is saved (a friendly early refusal) and at every
 * connection (the real defence, because DNS can answer differently the second time).
 */

export type AddressKind = 'public' | 'private' | 'loopback' | 'link_local' | 'cgnat' | 'unspecified' | 'multicast' | 'reserved';
export type NonPublicKind = Exclude<AddressKind, 'public'>;

export interface TargetPolicy {
  /** Deliver anywhere, private networks included (local development only). */
  allowPrivateAddresses: boolean;
  /** Exact hostnames or IP literals (lowercase, IPv6 without brackets) exempt from the refusal. */
  allowedPrivateHosts: string[];
  /** Refuse plain http URLs when they are saved (live mode). */
  requireHttps: boolean;
}

/** `dns.promises.lookup` with `all: true`, or a stand-in for tests. */
export type HostResolver = (hostname: string, options: { all: true; family?: number; hints?: number }) => Promise<dns.LookupAddress[]>;

const systemResolver: HostResolver = (hostname, options) => dns.promises.lookup(hostname, options);

/* ------------------------------------------------------------------------------------------ */
/* Address classification                                                                      */
/* ------------------------------------------------------------------------------------------ */

/** An address as an unsigned integer (32 bits for IPv4, 128 for IPv6), so prefixes are shifts. */
function ipv4ToBigInt(text: string): bigint {
  return text.split('.').reduce((value, octet) => (value << 8n) | BigInt(Number(octet)), 0n);
}

function ipv6ToBigInt(text: string): bigint {
  let address = text.replace(/%.*$/, ''); // a zone id (fe80::1%eth0) names an interface, not part of the address
  // A trailing dotted quad (::ffff:1.2.3.4) stands for the last two 16-bit groups.
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (quad) {
    const v4 = ipv4ToBigInt(quad[1]!);
    address = `${address.slice(0, quad.index)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = address.split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - headGroups.length - tailGroups.length).fill('0');
  return [...headGroups, ...zeros, ...tailGroups].reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n);
}

interface Range {
  network: bigint;
  prefix: number;
  kind: NonPublicKind;
}

function ranges(width: 32 | 128, table: Array<[cidr: string, kind: NonPublicKind]>): Range[] {
  return table.map(([cidr, kind]) => {
    const [network = '', prefix = ''] = cidr.split('/');
    return { network: width === 32 ? ipv4ToBigInt(network) : ipv6ToBigInt(network), prefix: Number(prefix), kind };
  });
}

function matchRange(address: bigint, width: 32 | 128, table: Range[]): NonPublicKind | undefined {
  const bits = BigInt(width);
  return table.find((range) => address >> (bits - BigInt(range.prefix)) === range.network >> (bits - BigInt(range.prefix)))?.kind;
}

// First match wins, so the more specific ranges come first.
const IPV4_RANGES = ranges(32, [
  ['0.0.0.0/32', 'unspecified'],
  ['0.0.0.0/8', 'reserved'], // "this network": Linux routes 0.x to the local host
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'cgnat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link_local'], // cloud metadata services live here (169.254.169.254)
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'], // IETF protocol assignments
  ['192.0.2.0/24', 'reserved'], // TEST-NET-1 (documentation)
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'reserved'], // benchmarking
  ['198.51.100.0/24', 'reserved'], // TEST-NET-2
  ['203.0.113.0/24', 'reserved'], // TEST-NET-3
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'reserved'], // limited broadcast
  ['240.0.0.0/4', 'reserved'],
]);

const IPV6_RANGES = ranges(128, [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/8', 'reserved'], // deprecated IPv4-compatible and other IETF-reserved forms (mapped is handled before)
  ['64:ff9b:1::/48', 'private'], // local-use NAT64 (RFC 8215)
  ['100::/64', 'reserved'], // discard-only
  ['2001::/32', 'reserved'], // Teredo: tunnels to an obfuscated IPv4 address we cannot vet
  ['2001:db8::/32', 'reserved'], // documentation
  ['3fff::/20', 'reserved'], // documentation (RFC 9637)
  ['fc00::/7', 'private'], // unique local addresses
  ['fe80::/10', 'link_local'],
  ['fec0::/10', 'private'], // deprecated site-local
  ['ff00::/8', 'multicast'],
]);

const IPV4_MAPPED = ranges(128, [['::ffff:0:0/96', 'reserved']]);
const NAT64 = ranges(128, [['64:ff9b::/96', 'reserved']]);
const SIX_TO_FOUR = ranges(128, [['2002::/16', 'reserved']]);
const GLOBAL_UNICAST = ranges(128, [['2000::/3', 'reserved']]);

function classifyIpv4(address: bigint): AddressKind {
  return matchRange(address, 32, IPV4_RANGES) ?? 'public';
}

/**
 * What kind of address `ip` is. IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4) are
 * judged by that IPv4 address, since that is where the packets end up. Anything that is not an IP
 * address is 'reserved': the classification fails closed.
 */
export function classifyAddress(ip: string): AddressKind {
  const version = isIP(ip);
  if (version === 4) return classifyIpv4(ipv4ToBigInt(ip));
  if (version !== 6) return 'reserved';
  const address = ipv6ToBigInt(ip);
  if (matchRange(address, 128, IPV4_MAPPED)) return classifyIpv4(address & 0xffff_ffffn);
  if (matchRange(address, 128, NAT64)) return classifyIpv4(address & 0xffff_ffffn);
  if (matchRange(address, 128, SIX_TO_FOUR)) return classifyIpv4((address >> 80n) & 0xffff_ffffn);
  const special = matchRange(address, 128, IPV6_RANGES);
  if (special) return special;
  // Only 2000::/3 is allocated for global unicast; everything else is not (yet) a place to send to.
  return matchRange(address, 128, GLOBAL_UNICAST) ? 'public' : 'reserved';
}

const KIND_WORDING: Record<NonPublicKind, string> = {
  private: 'a private address',
  loopback: 'a loopback address',
  link_local: 'a link-local address',
  cgnat: 'a carrier-grade NAT address',
  unspecified: 'an unspecified address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
};

/* ------------------------------------------------------------------------------------------ */
/* Policy                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/** A URL's hostname as the policy compares it: lowercase, IPv6 literals without brackets. */
export function policyHostname(hostname: string): string {
  const lower = hostname.toLowerCase();
  return lower.startsWith('[') && lower.endsWith(']') ? lower.slice(1, -1) : lower;
}

function isExempt(hostname: string, policy: TargetPolicy): boolean {
  return policy.allowPrivateAddresses || policy.allowedPrivateHosts.includes(policyHostname(hostname));
}

/** The kind of `address` when the policy refuses it for `hostname`, or null when it may be reached. */
export function refusedAddressKind(hostname: string, address: string, policy: TargetPolicy): NonPublicKind | null {
  if (isExempt(hostname, policy)) return null;
  const kind = classifyAddress(address);
  return kind === 'public' ? null : kind;
}

/** The error a refused connection fails with; the sender reports it as `blocked`. */
export class BlockedAddressError extends Error {
  readonly code = 'EMERX_BLOCKED_ADDRESS';

  constructor(
    readonly hostname: string,
    readonly address: string,
    readonly kind: NonPublicKind,
  ) {
    super(
      hostname === address
        ? `${address} is ${KIND_WORDING[kind]}; webhooks go to public addresses only`
        : `${hostname} resolves to ${address}, ${KIND_WORDING[kind]}; webhooks go to public addresses only`,
    );
    this.name = 'BlockedAddressError';
  }
}

/** The first address of a resolution the policy refuses, as an error; null when all are allowed. */
function firstRefusal(hostname: string, addresses: readonly string[], policy: TargetPolicy): BlockedAddressError | null {
  for (const address of addresses) {
    const kind = refusedAddressKind(hostname, address, policy);
    if (kind) return new BlockedAddressError(hostname, address, kind);
  }
  return null;
}

/** Refuses `hostname` when it is an IP literal the policy does not allow (net.connect skips lookup for these). */
export function refuseLiteralHost(hostname: string, policy: TargetPolicy): BlockedAddressError | null {
  const host = policyHostname(hostname);
  return isIP(host) ? firstRefusal(host, [host], policy) : null;
}

/* ------------------------------------------------------------------------------------------ */
/* Save-time check                                                                             */
/* ------------------------------------------------------------------------------------------ */

export const MAX_URL_LENGTH = 2048;

const urlError = (code: string, message: string): FieldError[] => [{ field: 'url', code, message }];

/**
 * The field errors of a subscription URL, empty when it may be saved. Resolves the hostname and
 * refuses it when any address is non-public: a host with one private record among public ones is
 * exactly what a rebinding attack looks like.
 */
export async function checkEndpointUrl(url: unknown, policy: TargetPolicy, resolve: HostResolver = systemResolver): Promise<FieldError[]> {
  if (url === undefined || url === null || url === '') return urlError('required', 'url is required');
  if (typeof url !== 'string') return urlError('invalid_type', 'url must be a string');
  if (url.length > MAX_URL_LENGTH) return urlError('too_long', `url must be at most ${MAX_URL_LENGTH} characters`);
  const parsed = URL.canParse(url) ? new URL(url) : null;
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || !parsed.hostname) {
    return urlError('invalid_url', 'url must be an absolute http or https URL');
  }
  // Credentials in a URL end up in logs and in the delivery list; receivers authenticate with the signature.
  if (parsed.username || parsed.password) return urlError('credentials_in_url', 'url must not contain a username or password');
  if (policy.requireHttps && parsed.protocol !== 'https:') return urlError('https_required', 'url must use https');

  const hostname = policyHostname(parsed.hostname);
  if (isExempt(hostname, policy)) return [];
  let addresses: string[];
  if (isIP(hostname)) {
    addresses = [hostname];
  } else {
    try {
      addresses = (await resolve(hostname, { all: true })).map((entry) => entry.address);
    } catch {
      // Not resolvable now (ENOTFOUND, a flaky resolver): accepted, the DNS record may come later and
      // every connection is checked again by guardedLookup.
      return [];
    }
  }
  const refusal = firstRefusal(hostname, addresses, policy);
  if (!refusal) return [];
  const target = hostname === refusal.address ? `url points to ${refusal.address}` : `url resolves to ${refusal.address}`;
  return urlError('private_address', `${target}, ${KIND_WORDING[refusal.kind]}; webhooks go to public addresses only`);
}

/* ------------------------------------------------------------------------------------------ */
/* Connection-time check                                                                       */
/* ------------------------------------------------------------------------------------------ */

/**
 * A `lookup` for net/tls connect (undici's `connect.lookup`) that refuses hosts resolving to
 * addresses the policy does not allow. Checking here, on the addresses actually connected to,
 * defeats DNS rebinding (a public answer at save time, 127.0.0.1 at delivery time).
 * net calls it with `all: true` when it races address families (autoSelectFamily, Node's default),
 * and without it otherwise; both shapes are answered.
 */
export function guardedLookup(policy: TargetPolicy, resolve: HostResolver = systemResolver): LookupFunction {
  return (hostname, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
    // Every address is fetched even when net wants one, so that none of them escapes the check.
    resolve(hostname, { all: true, family, ...(options.hints ? { hints: options.hints } : {}) }).then(
      (entries) => {
        if (entries.length === 0) {
          callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname }), '', 0);
          return;
        }
        const refusal = firstRefusal(
          hostname,
          entries.map((entry) => entry.address),
          policy,
        );
        if (refusal) callback(refusal, '', 0);
        else if (options.all) callback(null, entries);
        else callback(null, entries[0]!.address, entries[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}
