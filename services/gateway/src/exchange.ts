import { Readable } from 'node:stream';
import { errors, util, type Dispatcher } from 'undici';

/** An upstream's answer as the proxy copies it back. */
export interface UpstreamAnswer {
  statusCode: number;
  /** Lower-case names; a repeated header (Set-Cookie) as an array, as undici's `request()` gives them. */
  headers: Record<string, string | string[]>;
  /** Read whole (small, of known size), a stream (large or unsized), or null (HEAD, 204, 304: no body). */
  body: Buffer | Readable | null;
}

/** The upstream failed after its headers, while a body the proxy reads whole was still arriving. */
export class AnswerCutShort extends Error {
  constructor(cause: Error) {
    super(`the answer ended before its body was complete: ${cause.message}`, { cause });
  }
}

export interface ExchangeRequest {
  method: Dispatcher.HttpMethod;
  path: string;
  headers: Record<string, string>;
  body: Buffer | null;
}

/** The legacy callbacks of undici's DispatchHandler: every undici dispatcher and InProcessDispatcher call them without an adapter. */
export interface RawHandler {
  onConnect(abort: (reason?: Error) => void): void;
  onHeaders(statusCode: number, rawHeaders: Array<Buffer | string>, resume: () => void, statusText: string): boolean;
  onData(chunk: Buffer): boolean;
  onComplete(trailers: unknown): void;
  onError(error: Error): void;
}

/**
 * Sends one request and reads its answer with a dispatch handler of its own. `request()` gives
 * every answer a body stream (a Readable with its buffering, events and ticks) and an async
 * resource, and the proxy then read that stream back into one buffer: in the gateway's GET
 * profile undici's request API and the body stream were a tenth of the process. Here the chunks
 * of a small answer are collected as they arrive and the promise resolves once, with the body.
 *
 * Resolves when a body of declared length up to `maxBuffered` bytes is complete (or at once when
 * there is none), or at the headers with a stream for a larger or unsized body; the stream pauses
 * the upstream connection while its reader is behind, and destroying it aborts the request.
 * Rejects with the transport's error before the headers, and with `AnswerCutShort` when the
 * upstream fails while a buffered body is arriving.
 */
export function exchange(dispatcher: Dispatcher, request: ExchangeRequest, maxBuffered: number): Promise<UpstreamAnswer> {
  return new Promise<UpstreamAnswer>((resolve, reject) => {
    let abort: ((reason?: Error) => void) | undefined;
    let statusCode = 0;
    let headers: Record<string, string | string[]> = {};
    let chunks: Buffer[] | undefined;
    let stream: Readable | undefined;
    let done = false;

    const handler: RawHandler = {
      onConnect(abortRequest) {
        abort = abortRequest;
      },
      onHeaders(status, rawHeaders, resume) {
        // 1xx informational answers precede the real one.
        if (status < 200) return true;
        statusCode = status;
        headers = util.parseHeaders(rawHeaders);
        if (status === 204 || status === 304 || request.method === 'HEAD') {
          // No body follows; complete() resolves.
          return true;
        }
        const length = Number(headers['content-length'] ?? NaN);
        if (length <= maxBuffered) {
          chunks = [];
          return true;
        }
        stream = new Readable({
          read: () => resume(),
          destroy: (error, callback) => {
            // The reader went away (a client that hung up): stop the upstream's answer too.
            if (!done) abort?.(error ?? new errors.RequestAbortedError());
            callback(error);
          },
        });
        // An upstream failure mid-stream ends this response, never the process: an 'error'
        // event without a listener would crash it.
        stream.on('error', () => undefined);
        resolve({ statusCode, headers, body: stream });
        return true;
      },
      onData(chunk) {
        if (stream) return stream.push(chunk);
        chunks?.push(chunk);
        return true;
      },
      onComplete() {
        done = true;
        if (stream) {
          stream.push(null);
          return;
        }
        const body = chunks ? (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)) : null;
        resolve({ statusCode, headers, body });
      },
      onError(error) {
        if (done) return;
        done = true;
        if (stream) stream.destroy(error);
        else reject(statusCode === 0 ? error : new AnswerCutShort(error));
      },
    };
    dispatcher.dispatch({ method: request.method, path: request.path, headers: request.headers, body: request.body }, handler as Dispatcher.DispatchHandler);
  });
}
