import type { Context, Middleware } from 'koa';
import { problemTypes, problemTypeUri } from '@merx/contracts';
import {
  InsufficientScope,
  InternalError,
  MalformedRequest,
  MerxError,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  Unauthenticated,
  Unavailable,
  UnsupportedMediaType,
  type ErrorCode,
} from './errors.js';
import { currentContext } from './context.js';
import { isDatabaseUnavailable } from './db.js';
import { newId } from './ids.js';
import type { Logger } from './logger.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  code: ErrorCode;
  detail: string;
  request_id?: string;
  [extension: string]: unknown;
}

export function statusOf(code: ErrorCode): number {
  return problemTypes[code].status;
}

export function toProblem(error: MerxError, requestId: string | undefined): ProblemBody {
  const { status, title } = problemTypes[error.code];
  return {
    type: problemTypeUri(error.code),
    title,
    status,
    code: error.code,
    detail: error.message,
    ...(requestId ? { request_id: requestId } : {}),
    ...error.extensions,
  };
}

/**
 * Errors thrown by libraries (body parsers, routers) carry an HTTP status and sometimes a
 * `type`. Translate the ones we expect into our hierarchy; anything else is internal.
 */
function fromLibraryError(error: unknown): MerxError {
  if (error instanceof MerxError) return error;
  if (isDatabaseUnavailable(error)) return new Unavailable('The database did not answer in time; retry in a moment.', error);
  const candidate = error as { status?: number; statusCode?: number; type?: string; expose?: boolean; message?: string };
  const status = candidate?.status ?? candidate?.statusCode;
  if (status === 413 || candidate?.type === 'entity.too.large') return new PayloadTooLarge(1024 * 1024);
  if (status === 415 || candidate?.type === 'encoding.unsupported' || candidate?.type === 'charset.unsupported') return new UnsupportedMediaType();
  if (status === 400 || candidate?.type === 'entity.parse.failed') return new MalformedRequest('The request body is not valid JSON.');
  if (status === 405) return new MethodNotAllowed([]);
  return new InternalError(error);
}

/** Writes a problem response; the one place a MerxError becomes HTTP. */
export function writeProblem(ctx: Context, error: MerxError): void {
  const requestId = currentContext()?.requestId;
  const body = toProblem(error, requestId);
  ctx.status = body.status;
  ctx.type = PROBLEM_CONTENT_TYPE;
  ctx.body = body;
  if (error instanceof Unauthenticated) {
    ctx.set('WWW-Authenticate', `Bearer error="${error.bearerError}", error_description="${error.message.replace(/"/g, "'")}"`);
  } else if (error instanceof InsufficientScope) {
    ctx.set('WWW-Authenticate', `Bearer error="insufficient_scope", scope="${error.requiredScope}"`);
  } else if (error instanceof MethodNotAllowed && error.allowed.length > 0) {
    ctx.set('Allow', error.allowed.join(', '));
  } else if (error instanceof RateLimited) {
    ctx.set('Retry-After', String(error.retryAfterSeconds));
  } else if (error instanceof Unavailable) {
    ctx.set('Retry-After', '1');
  }
}

/**
 * 4xx explain themselves; 5xx say nothing but an error id that the log line carries too, so an
 * operator can find the cause without the caller ever seeing a stack trace.
 */
export function problemMiddleware(logger: Logger): Middleware {
  return async function renderProblems(ctx, next) {
    try {
      await next();
      // Nothing answered: an unknown route, or a router's bodiless 405/501 for a known path.
      if (ctx.body === undefined || ctx.body === null) {
        if (ctx.status === 404) writeProblem(ctx, new NotFound('route'));
        else if (ctx.status === 405 || ctx.status === 501)
          writeProblem(ctx, new MethodNotAllowed((ctx.response.get('Allow') || '').split(/,\s*/).filter(Boolean)));
      }
    } catch (thrown) {
      const error = fromLibraryError(thrown);
      if (error.expose) {
        writeProblem(ctx, error);
        return;
      }
      const errorId = newId('err');
      logger.error({ err: thrown, error_id: errorId, method: ctx.method, path: ctx.path }, 'request failed');
      writeProblem(ctx, error);
      (ctx.body as ProblemBody).detail = `An internal error occurred. Reference: ${errorId}.`;
      (ctx.body as ProblemBody).error_id = errorId;
    }
  };
}
