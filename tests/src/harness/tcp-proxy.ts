import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP hop we control between a service and a real server (RabbitMQ), so a test can cut the
 * connection or refuse new ones, as a network partition or a broker outage would.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private blocked = false;
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = createServer((client) => {
      if (!proxy || proxy.blocked) {
        client.destroy();
        return;
      }
      const upstream = connect(targetPort, targetHost);
      proxy.track(client);
      proxy.track(upstream);
      client.pipe(upstream);
      upstream.pipe(client);
      const closeBoth = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', closeBoth).on('close', closeBoth);
      upstream.on('error', closeBoth).on('close', closeBoth);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = new TcpProxy(server, (server.address() as { port: number }).port);
    return proxy;
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
  }

  /** Drops every open connection and refuses new ones until `restore`. */
  cut(): void {
    this.blocked = true;
    for (const socket of this.sockets) socket.destroy();
  }

  restore(): void {
    this.blocked = false;
  }

  get openConnections(): number {
    return this.sockets.size;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
