import http2 from 'node:http2';
import net from 'node:net';
import { grpc, grpcConnectionsClosed, grpcConnectionsOpen, GRPC_SERVER_OPTIONS, proxyTrust, type Logger, type ProxyTrust } from '@merx/kit';

/**
 * How the public gRPC port bounds its connections. Without these, 50 TCP connections that sent
 * nothing and 50 HTTP/2 sessions that sent the preface and no stream were all still open after
 * 300 s (issue 29). grpc-js 1.14 honours idle, age, grace, keepalive and concurrent streams as
 * server options; the rest is ours (GrpcConnectionGuard).
 */
export interface GrpcConnectionSettings {
  /** `grpc.max_connection_idle_ms`: a connection with no call open this long gets a GOAWAY. */
  maxIdleMs: number;
  /** `grpc.max_connection_age_ms` (±10 % jitter): every connection gets a GOAWAY this old, so clients spread over new replicas. */
  maxAgeMs: number;
  /** `grpc.max_connection_age_grace_ms`: calls still open that long after the age GOAWAY are cut (clients resume). */
  maxAgeGraceMs: number;
  /** `grpc.keepalive_time_ms` / `_timeout_ms`: the server pings every connection this often; a peer that does not answer is gone. */
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  /** Pings the client sends closer together than this, with nothing but ping answers sent meanwhile, are strikes; the third closes the connection. */
  minPingIntervalMs: number;
  /** `grpc.max_concurrent_streams`: calls one connection may have open at once (a client queues the rest). */
  maxConcurrentStreams: number;
  /** A connection that has not had one call authenticated (a valid bearer token) this long after it opened is closed. */
  authDeadlineMs: number;
  /** Connections open at once on this replica; past it a new one is closed as it arrives. */
  maxConnections: number;
  /** Connections open at once from one address (not counting trusted proxies: MERX_TRUSTED_PROXIES). */
  maxConnectionsPerAddress: number;
}

export const DEFAULT_GRPC_CONNECTION_SETTINGS: GrpcConnectionSettings = {
  maxIdleMs: 120_000,
  maxAgeMs: 1_800_000,
  maxAgeGraceMs: 300_000,
  keepaliveTimeMs: 60_000,
  keepaliveTimeoutMs: 20_000,
  minPingIntervalMs: 10_000,
  maxConcurrentStreams: 1_000,
  authDeadlineMs: 10_000,
  maxConnections: 10_000,
  maxConnectionsPerAddress: 1_000,
};

/** Each setting's variable, and the least it may be (a smaller value would close what it should keep). */
const VARIABLES: Record<keyof GrpcConnectionSettings, { name: string; min: number }> = {
  maxIdleMs: { name: 'MERX_GRPC_MAX_IDLE_MS', min: 1_000 },
  maxAgeMs: { name: 'MERX_GRPC_MAX_AGE_MS', min: 1_000 },
  maxAgeGraceMs: { name: 'MERX_GRPC_MAX_AGE_GRACE_MS', min: 0 },
  keepaliveTimeMs: { name: 'MERX_GRPC_KEEPALIVE_TIME_MS', min: 1_000 },
  keepaliveTimeoutMs: { name: 'MERX_GRPC_KEEPALIVE_TIMEOUT_MS', min: 100 },
  minPingIntervalMs: { name: 'MERX_GRPC_MIN_PING_INTERVAL_MS', min: 0 },
  maxConcurrentStreams: { name: 'MERX_GRPC_MAX_CONCURRENT_STREAMS', min: 1 },
  authDeadlineMs: { name: 'MERX_GRPC_AUTH_DEADLINE_MS', min: 100 },
  maxConnections: { name: 'MERX_GRPC_MAX_CONNECTIONS', min: 1 },
  maxConnectionsPerAddress: { name: 'MERX_GRPC_MAX_CONNECTIONS_PER_ADDRESS', min: 1 },
};

/** MERX_GRPC_* (milliseconds and counts, whole numbers); throws one message naming every bad variable. */
export function grpcConnectionSettingsFromEnv(env: Record<string, string | undefined> = process.env): GrpcConnectionSettings {
  const settings = { ...DEFAULT_GRPC_CONNECTION_SETTINGS };
  const problems: string[] = [];
  for (const [key, { name, min }] of Object.entries(VARIABLES) as Array<[keyof GrpcConnectionSettings, { name: string; min: number }]>) {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') continue;
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < min) problems.push(`${name} must be a whole number of at least ${min}, not ${JSON.stringify(raw)}`);
    else settings[key] = value;
  }
  if (settings.keepaliveTimeoutMs >= settings.keepaliveTimeMs) problems.push('MERX_GRPC_KEEPALIVE_TIMEOUT_MS must be shorter than MERX_GRPC_KEEPALIVE_TIME_MS');
  if (settings.maxConnectionsPerAddress > settings.maxConnections)
    problems.push('MERX_GRPC_MAX_CONNECTIONS_PER_ADDRESS must not be above MERX_GRPC_MAX_CONNECTIONS');
  if (problems.length > 0) throw new Error(problems.join('; '));
  return settings;
}

/** The grpc-js server options for the settings grpc-js enforces itself. */
export function grpcServerOptionsOf(settings: GrpcConnectionSettings): grpc.ServerOptions {
  return {
    ...GRPC_SERVER_OPTIONS,
    'grpc.max_connection_idle_ms': settings.maxIdleMs,
    'grpc.max_connection_age_ms': settings.maxAgeMs,
    'grpc.max_connection_age_grace_ms': settings.maxAgeGraceMs,
    'grpc.keepalive_time_ms': settings.keepaliveTimeMs,
    'grpc.keepalive_timeout_ms': settings.keepaliveTimeoutMs,
    'grpc.max_concurrent_streams': settings.maxConcurrentStreams,
  };
}

/** A PING frame's answer: a 9-byte header and 8 bytes of payload. */
const PING_ACK_BYTES = 17;
/** Pings too close together tolerated before the connection is closed (gRPC core's default). */
const MAX_PING_STRIKES = 2;
const TOO_MANY_PINGS = Buffer.from('too_many_pings');

interface Tracked {
  socket: net.Socket;
  address: string;
  authenticated: boolean;
  deadline: NodeJS.Timeout;
}

/** `::ffff:10.0.0.1` is 10.0.0.1: one client, whichever way the listener took it. */
const addressOf = (socket: net.Socket) => socket.remoteAddress!.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');

/**
 * What grpc-js does not bound on its own, for every connection of the public port:
 * - a cap on connections open at once, in all and per client address (trusted proxies, which
 *   carry many clients, count only in all);
 * - a deadline to authenticate: a connection none of whose calls had a valid bearer token by
 *   then is closed. That covers a TCP connection that never sends a byte (Node makes an HTTP/2
 *   session for it at once, and grpc-js would keep it until its idle timeout), a session that
 *   sent the preface and nothing else, and one whose every call is refused UNAUTHENTICATED (each
 *   refused call would reset the idle timer);
 * - keepalive enforcement: grpc-js 1.14 answers every ping and ignores
 *   `grpc.http2.min_ping_interval_without_data_ms`, and a ping flood cost the gateway about a
 *   quarter of a core per connection; pings closer together than `minPingIntervalMs`, with
 *   nothing but ping answers sent between them, are strikes, and the third ends the connection
 *   with GOAWAY ENHANCE_YOUR_CALM "too_many_pings", as gRPC core does (grpc-js clients then double
 *   their keepalive interval).
 */
export class GrpcConnectionGuard {
  private readonly byPeer = new Map<string, Tracked>();
  private readonly perAddress = new Map<string, number>();
  private readonly trusted: ProxyTrust;

  constructor(
    private readonly settings: GrpcConnectionSettings,
    private readonly options: { logger: Logger; trustedProxies?: readonly string[] },
  ) {
    this.trusted = proxyTrust(options.trustedProxies ?? []);
  }

  get open(): number {
    return this.byPeer.size;
  }

  /** Takes a connection on or closes it; true when taken. */
  accept(socket: net.Socket): boolean {
    // Reset before it was taken: nothing to keep.
    if (socket.remoteAddress === undefined) {
      socket.destroy();
      return false;
    }
    const address = addressOf(socket);
    const fromProxy = this.trusted(address, 0);
    const refusal =
      this.byPeer.size >= this.settings.maxConnections
        ? 'capacity'
        : !fromProxy && (this.perAddress.get(address) ?? 0) >= this.settings.maxConnectionsPerAddress
          ? 'per_address'
          : undefined;
    if (refusal) {
      grpcConnectionsClosed.inc({ reason: refusal });
      this.options.logger.debug({ address, reason: refusal }, 'gRPC connection refused');
      socket.destroy();
      return false;
    }
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    const tracked: Tracked = {
      socket,
      address,
      authenticated: false,
      deadline: setTimeout(() => this.closeUnauthenticated(peer), this.settings.authDeadlineMs),
    };
    tracked.deadline.unref();
    this.byPeer.set(peer, tracked);
    this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1);
    grpcConnectionsOpen.inc();
    socket.once('close', () => this.forget(peer, tracked));
    // Errors end the connection; grpc-js's session reports them. Without a listener one would be thrown.
    socket.on('error', () => undefined);
    return true;
  }

  /** A call of this peer (`host:port`, as grpc-js's getPeer says it) had a valid token: its connection may stay. */
  authenticated(peer: string): void {
    const tracked = this.byPeer.get(peer);
    if (!tracked || tracked.authenticated) return;
    tracked.authenticated = true;
    clearTimeout(tracked.deadline);
  }

  /** Keepalive enforcement on a session of an accepted connection. */
  watchSession(session: http2.ServerHttp2Session): void {
    if (this.settings.minPingIntervalMs === 0) return;
    let lastPingAt = Number.NEGATIVE_INFINITY;
    let writtenThen = 0;
    let strikes = 0;
    session.on('ping', () => {
      const now = Date.now();
      const written = session.socket?.bytesWritten ?? 0;
      // More sent than ping answers since the last ping: the connection carries calls, and pings
      // then are flow control or keepalive of a busy client (as gRPC core resets on data sent).
      if (written - writtenThen > 2 * PING_ACK_BYTES) strikes = 0;
      else if (now - lastPingAt < this.settings.minPingIntervalMs) strikes += 1;
      lastPingAt = now;
      writtenThen = written;
      if (strikes > MAX_PING_STRIKES) this.closeForPings(session);
    });
  }

  private closeForPings(session: http2.ServerHttp2Session): void {
    if (session.closed || session.destroyed) return;
    grpcConnectionsClosed.inc({ reason: 'too_many_pings' });
    this.options.logger.info({ address: session.socket?.remoteAddress }, 'gRPC connection closed: too many pings');
    session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, 0, TOO_MANY_PINGS);
    session.close();
    // The GOAWAY goes out first; calls still open do not keep a flooding peer here.
    setTimeout(() => session.destroy(), 100).unref();
  }

  private closeUnauthenticated(peer: string): void {
    const tracked = this.byPeer.get(peer);
    if (!tracked || tracked.authenticated) return;
    grpcConnectionsClosed.inc({ reason: 'unauthenticated' });
    this.options.logger.debug({ address: tracked.address }, 'gRPC connection closed: nothing authenticated in time');
    tracked.socket.destroy();
  }

  private forget(peer: string, tracked: Tracked): void {
    clearTimeout(tracked.deadline);
    if (this.byPeer.get(peer) !== tracked) return;
    this.byPeer.delete(peer);
    grpcConnectionsOpen.dec();
    const left = (this.perAddress.get(tracked.address) ?? 1) - 1;
    if (left > 0) this.perAddress.set(tracked.address, left);
    else this.perAddress.delete(tracked.address);
  }

  /** Ends whatever is still open (the server has stopped). */
  destroyAll(): void {
    for (const { socket } of this.byPeer.values()) socket.destroy();
  }
}

export interface GrpcListener {
  port: number;
  close(): Promise<void>;
}

/**
 * The port: our own TCP listener, handing each connection the guard accepts to the grpc-js server
 * through its connection injector (public, experimental in 1.14). The http2 server behind the
 * injector is grpc-js's own and private; it is reached only to watch each session's pings, and
 * without it (another grpc-js) everything else still holds and the log says pings are unwatched.
 */
export async function listenGrpc(
  server: grpc.Server,
  guard: GrpcConnectionGuard,
  options: { host: string; port: number; logger: Logger },
): Promise<GrpcListener> {
  const internals = server as unknown as { http2Servers?: Map<unknown, unknown> };
  const before = new Set(internals.http2Servers?.keys() ?? []);
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const added = [...(internals.http2Servers?.keys() ?? [])].filter((candidate) => !before.has(candidate));
  const http2Server = added.length === 1 && added[0] instanceof net.Server ? (added[0] as http2.Http2Server) : undefined;
  if (http2Server) http2Server.on('session', (session: http2.ServerHttp2Session) => guard.watchSession(session));
  else options.logger.warn('this @grpc/grpc-js hides its HTTP/2 server: pings on the public gRPC port are not policed (MERX_GRPC_MIN_PING_INTERVAL_MS)');

  const listener = net.createServer((socket) => {
    if (guard.accept(socket)) injector.injectConnection(socket);
  });
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(options.port, options.host, () => {
      listener.off('error', reject);
      resolve();
    });
  });
  listener.on('error', (error) => options.logger.error({ err: error }, 'the public gRPC listener failed'));
  return {
    port: (listener.address() as net.AddressInfo).port,
    close: () => new Promise<void>((resolve) => listener.close(() => resolve())),
  };
}
