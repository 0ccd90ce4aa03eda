/**
 * A TCP relay in front of the real gRPC port, to drop HTTP/2 connections on purpose (a load
 * balancer restarting, a flaky network): `cut()` destroys every open connection, and the client
 * sees its stream fail as it would in production.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  /** Connections accepted so far. */
  connections = 0;

  private constructor(private readonly server: Server) {}

  static async start(upstream: string): Promise<TcpProxy> {
    const [host, port] = [upstream.slice(0, upstream.lastIndexOf(':')), Number(upstream.slice(upstream.lastIndexOf(':') + 1))];
    let proxy: TcpProxy | undefined;
    const server = createServer((client) => {
      proxy!.connections += 1;
      const target = connect(port, host);
      for (const socket of [client, target]) {
        proxy!.sockets.add(socket);
        socket.on('close', () => proxy!.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(target).pipe(client);
      client.on('close', () => target.destroy());
      target.on('close', () => client.destroy());
    });
    proxy = new TcpProxy(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get address(): string {
    const address = this.server.address();
    if (!address || typeof address === 'string') throw new Error('not listening');
    return `127.0.0.1:${address.port}`;
  }

  /** Drops every open connection, both ways. */
  cut(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
