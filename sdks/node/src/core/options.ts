/** Per-request options, accepted as the last argument of every method. */
export interface RequestOptions {
  /** The `Idempotency-Key` to send; POSTs get a fresh UUID v4 when none is given. */
  idempotencyKey?: string | undefined;
  /** The `If-Match` precondition (an `etag` from an earlier answer): a 412 when it is stale. */
  ifMatch?: string | undefined;
  /** Milliseconds per attempt; the client's `timeout` otherwise. */
  timeout?: number | undefined;
  /** Retries of this call; the client's `maxRetries` otherwise. */
  maxRetries?: number | undefined;
  /** Extra headers for this call. */
  headers?: Record<string, string> | undefined;
  /** Cancels the call (and its retries). */
  signal?: AbortSignal | undefined;
}

/** What every answer carries beside its body, as `result.lastResponse`. */
export interface ResponseMeta {
  status: number;
  /** Lower-case header names. */
  headers: Record<string, string>;
  requestId: string | undefined;
  /** The resource's version tag, for `ifMatch` on the next update. */
  etag: string | undefined;
}

/** A returned object with its answer's metadata: `product.lastResponse.etag`. */
export type WithResponse<T> = T & { readonly lastResponse: ResponseMeta };
