import type { IncomingHttpHeaders, RequestListener, Server } from 'node:http';
import { inject } from 'light-my-request';
import { Dispatcher, errors } from 'undici';

/** The handler methods undici's `request()` gives a dispatcher (its RequestHandler). */
interface RequestHandlerCallbacks {
  onConnect?(abort: (reason?: Error) => void): void;
  onHeaders?(statusCode: number, rawHeaders: string[], resume: () => void, statusText: string): boolean;
  onData?(chunk: Buffer): boolean;
  onComplete?(trailers: string[]): void;
  onError?(error: Error): void;
}

/** As long as the loopback pool waits for an upstream's headers (proxy.ts). */
const ANSWER_TIMEOUT_MS = 30_000;

function rawHeadersOf(headers: IncomingHttpHeaders | Record<string, string | string[] | number | undefined>): string[] {
  const raw: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
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
 * about 0.1 ms of CPU per request that nothing needed. light-my-request builds the service a
 * real `IncomingMessage` and `ServerResponse` over a fake socket, so the service runs exactly as
 * behind a port: its own middleware, headers, status and body, all of which the proxy copies as
 * it does from the network. Answers are read whole, as the proxy reads every API answer.
 */
export class InProcessDispatcher extends Dispatcher {
  /** `service.server`: while it is not listening the service is stopped, and requests fail as they would on a closed port. */
  constructor(private readonly service: { handle: RequestListener; server: Server }) {
    super();
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const callbacks = handler as RequestHandlerCallbacks;
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
    inject(this.service.handle, {
      method: options.method,
      url: options.path,
      headers: (options.headers ?? {}) as Record<string, string>,
      ...(body === null || body === undefined ? {} : { payload: body as Buffer | string }),
      remoteAddress: '127.0.0.1',
    }).then(
      (response) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        callbacks.onHeaders?.(response.statusCode, rawHeadersOf(response.headers), () => undefined, response.statusMessage);
        if (response.rawPayload.length > 0) callbacks.onData?.(response.rawPayload);
        callbacks.onComplete?.([]);
      },
      (error: unknown) => fail(error instanceof Error ? error : new Error(String(error))),
    );
    return true;
  }

  override async close(): Promise<void> {}

  override async destroy(): Promise<void> {}
}
