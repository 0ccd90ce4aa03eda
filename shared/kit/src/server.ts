import { readFileSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';

export interface RunningServer {
  server: Server;
  /** What the server calls for each request: the embedded gateway calls it directly, without the port. */
  handle: RequestListener;
  port: number;
  url: string;
  close(): Promise<void>;
}

/** Listens and resolves once the port is open; `close` drains keep-alive sockets so shutdown is quick. */
export async function listen(app: Koa, port: number, host = '127.0.0.1'): Promise<RunningServer> {
  const handle = app.callback();
  const server = createServer(handle);
  server.keepAliveTimeout = 65_000; // longer than the gateway's pool keep-alive, so it never reuses a socket we just closed
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    const refuse = (error: NodeJS.ErrnoException) => reject(error.code === 'EADDRINUSE' ? new PortInUse(host, port) : error);
    server.once('error', refuse);
    server.listen(port, host, () => {
      server.off('error', refuse);
      resolve();
    });
  });
  const actualPort = (server.address() as AddressInfo).port;
  return {
    server,
    handle,
    port: actualPort,
    url: `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${actualPort}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
      }),
  };
}

/** Another process listens on the port a service was told to use: a start-up failure with one clear line. */
export class PortInUse extends Error {
  constructor(
    readonly host: string,
    readonly port: number,
    setting = 'PORT',
  ) {
    super(`port ${port} on ${host} is in use by another process; stop it or choose another ${setting}`);
    this.name = 'PortInUse';
  }
}

/** Fails with PortInUse unless the port can be listened on now (before a start writes anything). */
export async function ensurePortFree(port: number, host: string): Promise<void> {
  if (port === 0) return;
  const { createServer: createNetServer } = await import('node:net');
  await new Promise<void>((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'EADDRINUSE' ? new PortInUse(host, port) : error));
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/**
 * A port free right now, for a process that must know its address before it listens (issuer URLs).
 * Chosen below the kernel's ephemeral range where there is one: a port the kernel handed out
 * (listen on 0) can be taken by any outgoing connection (a database pool, the broker) before the
 * process it was meant for binds it, which failed a cluster start now and then; outgoing
 * connections never take a port below that range, so only another listener could.
 */
export async function freePort(): Promise<number> {
  const below = ephemeralRangeStart();
  for (let attempt = 0; below !== undefined && attempt < 50; attempt += 1) {
    const port = FIRST_CHOSEN_PORT + Math.floor(Math.random() * (below - FIRST_CHOSEN_PORT));
    // Not one handed out already: the processes it went to may not be listening yet.
    if (handedOut.has(port) || !(await canListen(port))) continue;
    if (handedOut.size >= 4_096) handedOut.clear();
    handedOut.add(port);
    return port;
  }
  return kernelChosenPort();
}

const FIRST_CHOSEN_PORT = 10_000;
const handedOut = new Set<number>();

/** The first port of Linux's ephemeral range (net.ipv4.ip_local_port_range), if it leaves room below it. */
function ephemeralRangeStart(): number | undefined {
  try {
    const start = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(start) && start > FIRST_CHOSEN_PORT + 1_000 ? start : undefined;
  } catch {
    return undefined;
  }
}

async function canListen(port: number): Promise<boolean> {
  const { createServer: createNetServer } = await import('node:net');
  return new Promise((resolve) => {
    const probe = createNetServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

async function kernelChosenPort(): Promise<number> {
  const { createServer: createNetServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
