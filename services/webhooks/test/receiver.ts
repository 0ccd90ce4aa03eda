import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as a receiver saw it. */
export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  /** Exactly the bytes received, as signatures are computed over them. */
  body: string;
  // Tests read arbitrary members of the payload.
  json: any;
  receivedAt: Date;
}

/** What the receiver answers: a status (200 by default), or `hang` to never answer. */
export interface ReceiverAnswer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  hang?: boolean;
}

export type AnswerPolicy = (request: ReceivedWebhook, index: number) => ReceiverAnswer | Promise<ReceiverAnswer>;

/**
 * A webhook endpoint on loopback: records every request and answers as the test says. It is
 * the receiving side of the real HTTP path, not a mock of anything Merx owns. The end-to-end
 * suite imports it as `@merx/webhooks/testing`.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  private answer: AnswerPolicy = () => ({ status: 200 });
  private readonly waiters = new Set<() => void>();
  private readonly hanging = new Set<ServerResponse>();

  private constructor(private readonly server: Server) {}

  static async start(host = '127.0.0.1'): Promise<WebhookReceiver> {
    let receiver: WebhookReceiver | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => void receiver!.handle(req.url ?? '/', req.headers, Buffer.concat(chunks).toString('utf8'), res));
    });
    receiver = new WebhookReceiver(server);
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = '/hooks'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Changes how later requests are answered. */
  answerWith(policy: AnswerPolicy): void {
    this.answer = policy;
  }

  /** Requests carrying one event id (retries and replays keep it). */
  forEvent(eventId: string): ReceivedWebhook[] {
    return this.received.filter((request) => request.headers['webhook-id'] === eventId);
  }

  /** Resolves once `condition` holds over what was received; fails after `timeoutMs`. */
  async waitUntil<T>(condition: (received: ReceivedWebhook[]) => T | undefined | false, timeoutMs = 15_000, what = 'the expected webhooks'): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const result = condition(this.received);
      if (result) return result;
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `receiver: ${what} did not arrive within ${timeoutMs} ms (received ${this.received.length}: ${this.received.map((r) => r.json?.topic).join(', ')})`,
        );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        const waiters = this.waiters;
        function done() {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        }
        waiters.add(done);
      });
    }
  }

  /** The first request for which `match` holds, once it has arrived. */
  waitFor(match: (request: ReceivedWebhook) => boolean, timeoutMs?: number): Promise<ReceivedWebhook> {
    return this.waitUntil((received) => received.find(match), timeoutMs);
  }

  /** Ends requests left hanging (so the sender sees a reset) and stops listening. */
  async close(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(path: string, headers: IncomingHttpHeaders, body: string, res: ServerResponse): Promise<void> {
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
    const request: ReceivedWebhook = { path, headers, body, json, receivedAt: new Date() };
    const index = this.received.push(request) - 1;
    for (const waiter of [...this.waiters]) waiter();
    const answer = await this.answer(request, index);
    if (answer.hang) {
      this.hanging.add(res);
      res.on('close', () => this.hanging.delete(res));
      return;
    }
    res.writeHead(answer.status ?? 200, { 'content-type': 'text/plain', ...answer.headers });
    res.end(answer.body ?? 'ok');
  }
}
