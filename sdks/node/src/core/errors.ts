/**
 * The errors the SDK throws. Every answer of 400 and above becomes the MerxError subclass of its
 * status, carrying the problem document (RFC 9457) and the request id; no answer at all is a
 * ConnectionError (or a TimeoutError when our own timeout cut the request).
 */

/** A problem document as Merx sends it (`application/problem+json`). */
export interface ProblemDocument {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
  request_id?: string;
  errors?: FieldError[];
  retry_after?: number;
  throttle_class?: string;
  [extension: string]: unknown;
}

/** One field of a 422: where (`/sku`), and what is wrong with it. */
export interface FieldError {
  field?: string;
  pointer?: string;
  code?: string;
  message?: string;
  [extension: string]: unknown;
}

export class MerxError extends Error {
  /** The HTTP status, or undefined when there was no answer. */
  readonly status: number | undefined;
  /** The problem's stable `code` (`not_found`, `idempotency_key_in_use`, ...). */
  readonly code: string | undefined;
  readonly title: string | undefined;
  readonly detail: string | undefined;
  /** The `X-Request-Id` of the answer (or `request_id` of the problem): quote it to support. */
  readonly requestId: string | undefined;
  /** The whole problem document; `{}` when the answer had none. */
  readonly problem: ProblemDocument;
  /** The answer's headers, names in lower case. */
  readonly headers: Record<string, string>;

  constructor(
    message: string,
    init: { status?: number; problem?: ProblemDocument; headers?: Record<string, string>; requestId?: string; cause?: unknown } = {},
  ) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.problem = init.problem ?? {};
    this.headers = init.headers ?? {};
    this.code = typeof this.problem.code === 'string' ? this.problem.code : undefined;
    this.title = typeof this.problem.title === 'string' ? this.problem.title : undefined;
    this.detail = typeof this.problem.detail === 'string' ? this.problem.detail : undefined;
    this.requestId = init.requestId ?? (typeof this.problem.request_id === 'string' ? this.problem.request_id : undefined);
  }

  /** The subclass for an answer's status, with a message that says what Merx said. */
  static fromResponse(status: number, problem: ProblemDocument, headers: Record<string, string>, requestId: string | undefined): MerxError {
    const what = [problem.title, problem.detail].filter((part) => typeof part === 'string' && part !== '').join(': ') || `HTTP ${status}`;
    const message = `${status} ${what}${problem.code ? ` (${problem.code})` : ''}${requestId ? ` [request ${requestId}]` : ''}`;
    const init = { status, problem, headers, ...(requestId === undefined ? {} : { requestId }) };
    const ErrorClass = errorClassFor(status);
    return new ErrorClass(message, init);
  }
}

export class BadRequestError extends MerxError {}
export class AuthenticationError extends MerxError {}
export class PermissionDeniedError extends MerxError {}
export class NotFoundError extends MerxError {}
export class ConflictError extends MerxError {}
export class PreconditionFailedError extends MerxError {}

/** 422: the request was well formed but a field is wrong; `errors` says which. */
export class UnprocessableEntityError extends MerxError {
  get errors(): FieldError[] {
    return Array.isArray(this.problem.errors) ? this.problem.errors : [];
  }
}

/** 429: a throttle refused the call; `retryAfter` is the seconds the server asked us to wait. */
export class RateLimitError extends MerxError {
  get retryAfter(): number | undefined {
    const header = Number(this.headers['retry-after']);
    if (Number.isFinite(header) && this.headers['retry-after'] !== undefined) return header;
    return typeof this.problem.retry_after === 'number' ? this.problem.retry_after : undefined;
  }

  get throttleClass(): string | undefined {
    return typeof this.problem.throttle_class === 'string' ? this.problem.throttle_class : undefined;
  }
}

export class InternalServerError extends MerxError {}

/** Any other status of 400 and above that has no class of its own (405, 413, ...). */
export class UnexpectedStatusError extends MerxError {}

/** No answer: the connection failed or was dropped. */
export class ConnectionError extends MerxError {}

/** No answer within the timeout. */
export class TimeoutError extends ConnectionError {}

/** A constructor argument or environment variable is missing or malformed. */
export class ConfigurationError extends MerxError {}

/** A webhook request whose signature, timestamp or body hmac does not check out. */
export class WebhookVerificationError extends MerxError {}

type MerxErrorClass = new (
  message: string,
  init: { status?: number; problem?: ProblemDocument; headers?: Record<string, string>; requestId?: string },
) => MerxError;

function errorClassFor(status: number): MerxErrorClass {
  switch (status) {
    case 400:
      return BadRequestError;
    case 401:
      return AuthenticationError;
    case 403:
      return PermissionDeniedError;
    case 404:
      return NotFoundError;
    case 409:
      return ConflictError;
    case 412:
      return PreconditionFailedError;
    case 422:
      return UnprocessableEntityError;
    case 429:
      return RateLimitError;
    default:
      return status >= 500 ? InternalServerError : UnexpectedStatusError;
  }
}
