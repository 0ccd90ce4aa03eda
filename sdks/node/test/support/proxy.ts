/**
 * A small HTTP proxy of our own in front of the real Merx, to inject faults on purpose. The SDK is
 * pointed at the proxy and talks HTTP to it exactly as to Merx. Every request is recorded, and
 * queued faults apply to the next matching requests:
 * - `respond`: answer with a status and headers of our choosing without forwarding (503, 429, 401);
 * - `drop`: close the connection before forwarding: Merx never sees the request;
 * - `cutAfterForward`: forward, let Merx do the work, then close the connection without answering;
 * - `delay`: hold the request before forwarding (timeouts).
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface Fault {
  kind: 'respond' | 'drop' | 'cutAfterForward' | 'delay';
  method?: string;
  path?: string;
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  ms?: number;
}

export interface Seen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  fault: Fault['kind'] | undefined;
  at: number;
  status?: number;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-connection', 'content-length', 'host']);

export class FaultProxy {
  private readonly server: Server;
  private readonly faults: Fault[] = [];
  private readonly records: Seen[] = [];
  private readonly upstream: URL;

  private constructor(upstream: string) {
    this.upstream = new URL(upstream);
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  static async start(upstream: string): Promise<FaultProxy> {
    const proxy = new FaultProxy(upstream);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    const address = this.server.address();
    if (!address || typeof address === 'string') throw new Error('not listening');
    return `http://127.0.0.1:${address.port}`;
  }

  /** Queues `times` faults for the next requests matching `method` and `path` (a prefix of the path). */
  inject(fault: Fault, times = 1): void {
    for (let i = 0; i < times; i += 1) this.faults.push(fault);
  }

  seen(filter: { method?: string; path?: string } = {}): Seen[] {
    return this.records.filter((record) => (!filter.method || record.method === filter.method) && (!filter.path || record.path.split('?')[0] === filter.path));
  }

  pendingFaults(): number {
    return this.faults.length;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private takeFault(method: string, path: string): Fault | undefined {
    const index = this.faults.findIndex((fault) => (!fault.method || fault.method === method) && (!fault.path || path.startsWith(fault.path)));
    return index < 0 ? undefined : this.faults.splice(index, 1)[0];
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const fault = this.takeFault(method, path.split('?')[0]!);
    const record: Seen = { method, path, headers: req.headers, body: body.toString('utf8'), fault: fault?.kind, at: Date.now() };
    this.records.push(record);
    if (fault?.kind === 'respond') {
      record.status = fault.status ?? 503;
      res.writeHead(record.status, { 'Content-Type': 'application/problem+json', ...fault.headers });
      res.end(fault.body ?? JSON.stringify({ title: 'Injected by the test proxy', status: record.status }));
      return;
    }
    if (fault?.kind === 'drop') {
      req.socket.destroy();
      return;
    }
    if (fault?.kind === 'delay') await new Promise((resolve) => setTimeout(resolve, fault.ms ?? 0));
    try {
      const answer = await this.forward(method, path, req.headers, body);
      record.status = answer.status;
      if (fault?.kind === 'cutAfterForward') {
        req.socket.destroy();
        return;
      }
      if (res.destroyed) return; // the client gave up (a timeout test)
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    } catch {
      req.socket.destroy();
    }
  }

  private forward(
    method: string,
    path: string,
    headers: IncomingHttpHeaders,
    body: Buffer,
  ): Promise<{ status: number; headers: Record<string, string | string[]>; body: Buffer }> {
    const forwarded: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) forwarded[name] = value;
    if (body.length) forwarded['content-length'] = String(body.length);
    return new Promise((resolve, reject) => {
      const upstream = httpRequest({ host: this.upstream.hostname, port: this.upstream.port, method, path, headers: forwarded }, (response) => {
        const parts: Buffer[] = [];
        response.on('data', (chunk: Buffer) => parts.push(chunk));
        response.on('end', () => {
          const answerHeaders: Record<string, string | string[]> = {};
          for (const [name, value] of Object.entries(response.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) answerHeaders[name] = value;
          resolve({ status: response.statusCode ?? 502, headers: answerHeaders, body: Buffer.concat(parts) });
        });
        response.on('error', reject);
      });
      upstream.on('error', reject);
      upstream.end(body);
    });
  }
}
