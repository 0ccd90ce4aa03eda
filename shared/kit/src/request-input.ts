import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import type { Context, Middleware } from 'koa';

declare module 'koa' {
  interface Request {
    /** The parsed JSON body (jsonBodyMiddleware); undefined when the request had none. */
    body?: unknown;
  }
}
import { fieldPath, MalformedRequest, PayloadTooLarge, UnsupportedMediaType, ValidationFailed, type FieldError } from './errors.js';

export const MAX_BODY_BYTES = 1024 * 1024;
/** Deeper JSON is refused before anything walks it: recursive code (hashing, validation) must never run out of stack. */
export const MAX_JSON_DEPTH = 64;
const MAX_REPORTED_STRING_ERRORS = 20;

const DECOMPRESSORS: Record<string, (input: Buffer) => Buffer> = {
  gzip: (input) => gunzipSync(input, { maxOutputLength: MAX_BODY_BYTES + 1 }),
  deflate: (input) => inflateSync(input, { maxOutputLength: MAX_BODY_BYTES + 1 }),
  br: (input) => brotliDecompressSync(input, { maxOutputLength: MAX_BODY_BYTES + 1 }),
};

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * A request body of at most `limit` bytes, declared or not: a chunked body that grows past the
 * limit is a 413 as soon as it does, not after it was all read. Events rather than `for await`:
 * the async iterator's promise per chunk was 1-2 % of a process on a POST. Past the limit the
 * rest of the body is left to the server, which discards it, so the 413 still reaches the client.
 */
export function readBoundedBody(ctx: Context, limit: number): Promise<Buffer> {
  if (Number(ctx.get('content-length') || 0) > limit) return Promise.reject(new PayloadTooLarge(limit));
  const request = ctx.req;
  if (request.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      request.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      stop();
      reject(new PayloadTooLarge(limit));
    };
    const onEnd = () => {
      stop();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      stop();
      reject(error);
    };
    // The client left mid-body: as the stream's own iterator reports it.
    const onClose = () => {
      stop();
      reject(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    };
    request.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

function decode(raw: Buffer, encoding: string): Buffer {
  const codings = encoding
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  let body = raw;
  // Codings are listed in the order they were applied: undo them last first.
  for (const coding of codings.reverse()) {
    const decompress = DECOMPRESSORS[coding];
    if (!decompress) throw new UnsupportedMediaType(`Content-Encoding ${coding} is not supported; send identity, gzip, deflate or br.`);
    try {
      body = decompress(body);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError) throw new PayloadTooLarge(MAX_BODY_BYTES);
      throw new MalformedRequest(`The request body is not valid ${coding} data, as its Content-Encoding says it is.`);
    }
    if (body.length > MAX_BODY_BYTES) throw new PayloadTooLarge(MAX_BODY_BYTES);
  }
  return body;
}

/** How deep the JSON text nests, counted without parsing (and so without recursion). */
function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === 0x5c)
        i += 1; // backslash: skip the escaped character
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x7b || code === 0x5b) {
      depth += 1;
      if (depth > deepest) deepest = depth;
    } else if (code === 0x7d || code === 0x5d) depth -= 1;
  }
  return deepest;
}

const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a string cannot be stored, if it cannot: PostgreSQL refuses NUL and unpaired surrogates in text and jsonb. */
export function unstorableString(value: string): string | undefined {
  if (value.includes('\u0000')) return 'contains a NUL character (\\u0000), which cannot be stored';
  if (UNPAIRED_SURROGATE.test(value)) return 'is not valid Unicode: it has an unpaired surrogate (\\ud800-\\udfff)';
  return undefined;
}

/**
 * Every key and string value of a parsed JSON document that could not be stored, as field
 * errors, walked without recursion. Caught at the edge, so no state change (and no event, and
 * no audit entry) is ever written that some consumer could not store.
 */
export function unstorableStrings(document: unknown): FieldError[] {
  const errors: FieldError[] = [];
  const pending: Array<{ value: unknown; path: string }> = [{ value: document, path: '' }];
  while (pending.length > 0 && errors.length < MAX_REPORTED_STRING_ERRORS) {
    const { value, path } = pending.pop()!;
    if (typeof value === 'string') {
      const why = unstorableString(value);
      if (why) errors.push({ field: path || '(body)', code: 'invalid_string', message: `${path || 'the body'} ${why}` });
    } else if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index -= 1) pending.push({ value: value[index], path: `${path}[${index}]` });
    } else if (value !== null && typeof value === 'object') {
      for (const [key, member] of Object.entries(value)) {
        const memberPath = fieldPath(path, key);
        const why = unstorableString(key);
        if (why) errors.push({ field: memberPath, code: 'invalid_string', message: `the member name ${JSON.stringify(key)} ${why}` });
        pending.push({ value: member, path: memberPath });
      }
    }
  }
  return errors;
}

/** The request's JSON body, read whole (at most 1 MiB before and after decompression), checked and parsed. */
export async function readJsonBody(ctx: Context): Promise<unknown> {
  const charset = /;\s*charset=("?)([^";]+)\1/i.exec(ctx.get('content-type'))?.[2]?.toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8') throw new UnsupportedMediaType(`charset ${charset} is not supported; JSON is UTF-8.`);
  const body = decode(await readBoundedBody(ctx, MAX_BODY_BYTES), ctx.get('content-encoding'));
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new MalformedRequest('The request body is not valid UTF-8.');
  }
  if (nestingDepth(text) > MAX_JSON_DEPTH) throw new MalformedRequest(`The request body nests deeper than ${MAX_JSON_DEPTH} levels.`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new MalformedRequest('The request body is not valid JSON.');
  }
  const unstorable = unstorableStrings(parsed);
  if (unstorable.length > 0) throw new ValidationFailed(unstorable);
  return parsed;
}

/** Query parameters and the path carry no NUL and only well-formed Unicode either. */
export function checkRequestTarget(ctx: Context): void {
  let path: string;
  try {
    path = decodeURIComponent(ctx.path);
  } catch {
    throw new MalformedRequest('The request path has an escape that is not valid UTF-8.');
  }
  if (unstorableString(path)) throw new MalformedRequest('The request path contains a NUL character or invalid Unicode.');
  const errors: FieldError[] = [];
  for (const [name, value] of Object.entries(ctx.query)) {
    for (const single of Array.isArray(value) ? value : [value]) {
      const why = typeof single === 'string' ? unstorableString(single) : undefined;
      if (why) errors.push({ field: name, code: 'invalid_string', message: `${name} ${why}` });
    }
  }
  if (errors.length > 0) throw new ValidationFailed(errors);
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/**
 * JSON only: a body sent with any other media type is a 415 before we read a byte of it, bodies
 * over 1 MiB (compressed or not) are a 413, malformed, undecodable or too deeply nested JSON a
 * 400, and strings no storage could hold (NUL, unpaired surrogates) a 422 naming the field.
 */
export function jsonBodyMiddleware(): Middleware {
  return async function requireJsonBody(ctx, next) {
    checkRequestTarget(ctx);
    if (!METHODS_WITH_BODY.has(ctx.method)) return next();
    const hasBody = Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
    if (!hasBody) {
      ctx.request.body = undefined;
      return next();
    }
    if (!ctx.is('application/json', '+json')) throw new UnsupportedMediaType();
    (ctx.request as { body?: unknown }).body = await readJsonBody(ctx);
    return next();
  };
}
