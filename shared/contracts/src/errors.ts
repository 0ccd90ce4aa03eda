/**
 * Problem types (RFC 9457) of the public API. The status is fixed per code so that a client can
 * branch on `code` alone; shared/kit maps its error hierarchy onto these and the OpenAPI document
 * derives its problem schemas from them, so the two cannot drift apart.
 */
export const problemTypes = {
  malformed_request: { status: 400, title: 'Malformed request' },
  unauthenticated: { status: 401, title: 'Unauthenticated' },
  insufficient_scope: { status: 403, title: 'Insufficient scope' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  idempotency_key_in_use: { status: 409, title: 'Idempotency key in use' },
  precondition_failed: { status: 412, title: 'Precondition failed' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  validation_failed: { status: 422, title: 'Validation failed' },
  idempotency_key_reused: { status: 422, title: 'Idempotency key reused' },
  rate_limited: { status: 429, title: 'Too many requests' },
  internal: { status: 500, title: 'Internal error' },
  unavailable: { status: 503, title: 'Service unavailable' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemCode = keyof typeof problemTypes;

export const problemCodes = Object.keys(problemTypes) as ProblemCode[];

export const problemTypeBaseUri = 'https://merx.dev/errors/';

export function problemTypeUri(code: ProblemCode): string {
  return `${problemTypeBaseUri}${code}`;
}

export function isProblemCode(value: unknown): value is ProblemCode {
  return typeof value === 'string' && Object.hasOwn(problemTypes, value);
}

/** Members every problem body carries, plus the extensions the platform defines. */
export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  code: ProblemCode;
  detail: string;
  request_id: string;
  errors?: Array<{ field: string; code: string; message: string }>;
  throttle_class?: string;
  retry_after?: number;
  required_scope?: string;
}
