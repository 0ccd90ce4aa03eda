/** A webhook receiver for the tests: records every delivery exactly as it arrived (raw body, headers). */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { eventually } from './server.js';

export interface Delivery {
  body: Buffer;
  headers: IncomingHttpHeaders;
}

export class WebhookReceiver {
  private readonly server: Server;
  readonly deliveries: Delivery[] = [];

  private constructor(private readonly status: number) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        this.deliveries.push({ body: Buffer.concat(chunks), headers: req.headers });
        res.writeHead(this.status, { 'Content-Length': '0' });
        res.end();
      });
    });
  }

  static async start(status = 200): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver(status);
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    const address = this.server.address();
    if (!address || typeof address === 'string') throw new Error('not listening');
    return `http://127.0.0.1:${address.port}/hooks`;
  }

  waitFor(topic: string, count = 1): Promise<Delivery[]> {
    return eventually(() => {
      const found = this.deliveries.filter((delivery) => delivery.body.toString('utf8').includes(`"topic":"${topic}"`));
      return found.length >= count ? found : undefined;
    }, `${count} ${topic} deliveries`);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
