import { EventEmitter } from 'node:events';
import { ServerResponse, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type RequestListener, type Server } from 'node:http';
import { Readable, Writable } from 'node:stream';
import { Dispatcher, errors } from 'undici';
import type { RawHandler } from './exchange.js';

/** As long as the loopback pool waits for an upstream's headers (proxy.ts). */
const ANSWER_TIMEOUT_MS = 30_000;

/** What a service reads of its peer: the gateway, as a loopback client, the same as behind a port. */
class LoopbackPeer extends EventEmitter {
  readonly remoteAddress = '127.0.0.1';
  readonly remoteFamily = 'IPv4';
  readonly encrypted = false;
  readonly readable = false;
}

/**
 * The request as the service's listener reads it: the fields of an `IncomingMessage` that Koa,
 * its body parsers and oidc-provider use, and the body as a stream that ends after the payload.
 */
class InProcessRequest extends Readable {
  readonly httpVersion = '1.1';
  readonly httpVersionMajor = 1;
  readonly httpVersionMinor = 1;
  readonly aborted = false;
  complete = false;
  readonly headers: IncomingHttpHeaders = {};
  readonly rawHeaders: string[] = [];
  readonly socket = new LoopbackPeer();

  constructor(
    readonly method: string,
    readonly url: string,
    headers: Record<string, string>,
    private payload: Buffer | null,
  ) {
    super();
    for (const name in headers) {
      const lower = name.toLowerCase();
      this.headers[lower] = headers[name];
      this.rawHeaders.push(lower, headers[name]!);
    }
    // What undici sends on the network: a host, and the size of a body it holds whole.
    if (this.headers.host === undefined) this.addHeader('host', 'localhost:80');
    if (payload && this.headers['content-length'] === undefined) this.addHeader('content-length', String(payload.length));
  }

  private addHeader(name: string, value: string): void {
    this.headers[name] = value;
    this.rawHeaders.push(name, value);
  }

  override _read(): void {
    const payload = this.payload;
    this.payload = null;
    if (payload && payload.length > 0) this.push(payload);
    this.complete = true;
    this.push(null);
  }
}

/**
 * A `ServerResponse` whose socket goes nowhere: node renders and "sends" the headers as usual,
 * so the service's middleware sees every state it would see on a socket (headersSent, finish),
 * while the body's chunks are kept here for the proxy. HEAD, 204 and 304 keep none, as a server
 * sends none.
 */
class InProcessResponse extends ServerResponse {
  readonly chunks: Buffer[] = [];

  constructor(request: InProcessRequest) {
    super(request as unknown as IncomingMessage);
    this.assignSocket(
      new Writable({
        write(_chunk, _encoding, callback) {
          callback();
        },
      }) as never,
    );
  }

  private keep(chunk: unknown, encoding: unknown): void {
    if (!(this as unknown as { _hasBody: boolean })._hasBody || chunk === undefined || chunk === null) return;
    if (typeof chunk === 'string') this.chunks.push(Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
    else if (chunk instanceof Uint8Array && chunk.length > 0) this.chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }

  override write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    const written = (ServerResponse.prototype.write as (...args: unknown[]) => boolean).call(this, chunk, encoding, callback);
    this.keep(chunk, encoding);
    return written;
  }

  override end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
    if (typeof chunk === 'function') return this.end(undefined, undefined, chunk);
    if (typeof encoding === 'function') return this.end(chunk, undefined, encoding);
    if (chunk !== undefined && chunk !== null && !this.writableEnded) this.write(chunk, encoding);
    (ServerResponse.prototype.end as (...args: unknown[]) => this).call(this, callback);
    return this;
  }
}

/** The headers of an answer as undici's dispatchers give them: name and value, a repeated header once per value. */
function rawHeadersOf(headers: OutgoingHttpHeaders): string[] {
  const raw: string[] = [];
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const each of value) raw.push(name, each);
    else raw.push(name, String(value));
  }
  return raw;
}

/**
 * An undici dispatcher that hands requests to a service's request listener in this process,
 * with no socket between them: the embedded mode runs every service beside the gateway, and the
 * loopback hop (undici's client, the kernel's TCP both ways, the service's HTTP parser) cost
 * about 0.1 ms of CPU per request that nothing needed. The service gets a request with the
 * fields of an `IncomingMessage` from a loopback peer and a real `ServerResponse` whose socket
 * discards what node writes to it, so it runs exactly as behind a port: its own middleware,
 * headers, status and body, all of which the proxy copies as it does from the network. (It
 * used light-my-request, whose generic injection, with option validation, URL parsing, a
 * deferred body, header regexes and the body decoded to a string, cost more than the request.)
 */
export class InProcessDispatcher extends Dispatcher {
  /** `service.server`: while it is not listening the service is stopped, and requests fail as they would on a closed port. */
  constructor(private readonly service: { handle: RequestListener; server: Server }) {
    super();
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const callbacks = handler as Partial<RawHandler>;
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      callbacks.onError?.(error);
    };
    callbacks.onConnect?.((reason) => fail(reason ?? new errors.RequestAbortedError()));
    if (!this.service.server.listening) {
      queueMicrotask(() => fail(new errors.SocketError('the service has stopped')));
      return true;
    }
    timer = setTimeout(() => fail(new errors.HeadersTimeoutError()), ANSWER_TIMEOUT_MS);
    const body = options.body;
    const payload = body === null || body === undefined ? null : Buffer.isBuffer(body) ? body : Buffer.from(body as string);
    const request = new InProcessRequest(options.method, options.path, (options.headers ?? {}) as Record<string, string>, payload);
    const response = new InProcessResponse(request);
    response.once('finish', () => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        callbacks.onHeaders?.(response.statusCode, rawHeadersOf(response.getHeaders()), () => undefined, response.statusMessage);
        const { chunks } = response;
        if (chunks.length > 0) callbacks.onData?.(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
        callbacks.onComplete?.([]);
      }
      // As a server does once an answer is sent: listeners on 'close' learn the exchange is over.
      process.nextTick(() => {
        response.emit('close');
        request.emit('close');
      });
    });
    // Destroyed before it finished (a service that gives up on a request): a connection reset.
    response.once('close', () => {
      if (!settled) fail(new errors.SocketError('the service closed the connection before answering'));
    });
    try {
      this.service.handle(request as unknown as IncomingMessage, response);
    } catch (error) {
      fail(error instanceof Error ? error : new Error(String(error)));
    }
    return true;
  }

  override async close(): Promise<void> {}

  override async destroy(): Promise<void> {}
}
