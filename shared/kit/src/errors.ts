/**
 * One error hierarchy for every service. It knows nothing of HTTP: the problem middleware
 * (problem.ts) is the single place that turns a MerxError into a status and a problem+json body.
 * `expose` says whether `detail` may be shown to the caller; internal errors never are.
 */
export type ErrorCode =
  | 'malformed_request'
  | 'unauthenticated'
  | 'insufficient_scope'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'precondition_failed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'validation_failed'
  | 'idempotency_key_reused'
  | 'idempotency_key_in_use'
  | 'rate_limited'
  | 'internal'
  | 'unavailable';

export interface FieldError {
  /** Where, written by fieldPath: `scopes[0]`, `settings.url`, `transform.set["customer.email"]`; `(body)` for the body as a whole. */
  field: string;
  code: string;
  message: string;
}

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/**
 * The one way a field's place is written in a 422: members joined by dots, array positions in
 * brackets, and a member whose name is not a plain identifier (a dot, a space) quoted in brackets
 * so the path stays unambiguous. `base` is a path already written this way ('' for the top).
 */
export function fieldPath(base: string, ...members: Array<string | number>): string {
  return members.reduce<string>((path, member) => {
    if (typeof member === 'number') return `${path}[${member}]`;
    if (PLAIN_KEY.test(member)) return path ? `${path}.${member}` : member;
    return `${path}[${JSON.stringify(member)}]`;
  }, base);
}

export class MerxError extends Error {
  readonly code: ErrorCode;
  readonly expose: boolean;
  /** Extra members for the problem body (e.g. `errors`, `throttle_class`). */
  readonly extensions: Record<string, unknown>;

  constructor(code: ErrorCode, detail: string, options: { expose?: boolean; extensions?: Record<string, unknown>; cause?: unknown } = {}) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.expose = options.expose ?? true;
    this.extensions = options.extensions ?? {};
  }
}

export class MalformedRequest extends MerxError {
  constructor(detail: string) {
    super('malformed_request', detail);
  }
}

export class Unauthenticated extends MerxError {
  constructor(
    detail = 'A valid bearer token is required.',
    readonly bearerError: 'invalid_token' | 'invalid_request' = 'invalid_token',
  ) {
    super('unauthenticated', detail);
  }
}

export class InsufficientScope extends MerxError {
  constructor(readonly requiredScope: string) {
    super('insufficient_scope', `This operation needs the scope ${requiredScope}.`, { extensions: { required_scope: requiredScope } });
  }
}

export class NotFound extends MerxError {
  constructor(resource: string, id?: string) {
    super('not_found', id ? `No ${resource} with id ${id}.` : `No such ${resource}.`);
  }
}

export class MethodNotAllowed extends MerxError {
  constructor(readonly allowed: string[]) {
    super('method_not_allowed', `Allowed methods: ${allowed.join(', ')}.`);
  }
}

export class Conflict extends MerxError {
  constructor(detail: string, extensions: Record<string, unknown> = {}) {
    super('conflict', detail, { extensions });
  }
}

export class PreconditionFailed extends MerxError {
  constructor(detail: string) {
    super('precondition_failed', detail);
  }
}

export class PayloadTooLarge extends MerxError {
  constructor(limitBytes: number) {
    super('payload_too_large', `Request bodies are limited to ${limitBytes} bytes.`);
  }
}

export class UnsupportedMediaType extends MerxError {
  constructor(detail = 'Request bodies must be sent with Content-Type: application/json.') {
    super('unsupported_media_type', detail);
  }
}

export class ValidationFailed extends MerxError {
  constructor(
    readonly errors: FieldError[],
    detail?: string,
  ) {
    super('validation_failed', detail ?? errors.map((e) => `${e.field}: ${e.message}`).join('; '), { extensions: { errors } });
  }
}

export class IdempotencyKeyReused extends MerxError {
  constructor() {
    super('idempotency_key_reused', 'This Idempotency-Key was used with a different request body or path.');
  }
}

export class IdempotencyKeyInUse extends MerxError {
  constructor() {
    super('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry later.');
  }
}

export class RateLimited extends MerxError {
  constructor(
    readonly throttleClass: string,
    readonly retryAfterSeconds: number,
  ) {
    super('rate_limited', `Too many requests in the ${throttleClass} class; retry after ${retryAfterSeconds}s.`, {
      extensions: { throttle_class: throttleClass, retry_after: retryAfterSeconds },
    });
  }
}

export class Unavailable extends MerxError {
  constructor(detail = 'The service is temporarily unavailable; retry later.', cause?: unknown) {
    super('unavailable', detail, { cause });
  }
}

export class InternalError extends MerxError {
  constructor(cause?: unknown) {
    super('internal', 'An internal error occurred.', { expose: false, cause });
  }
}
