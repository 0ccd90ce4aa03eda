/** One entry of a problem's `errors`: the field it concerns, as the API names it. */
export interface FieldProblem {
  field: string;
  code: string;
  message: string;
}

/** An RFC 9457 problem the API answered, kept whole so a page can say it in plain words. */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    readonly detail: string,
    readonly errors: FieldProblem[],
    readonly requestId: string | undefined,
    readonly retryAfterSeconds: number | undefined,
  ) {
    super(`${status} ${code}: ${detail}`);
    this.name = 'ApiProblem';
  }
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface ApiRequest {
  query?: Query;
  body?: unknown;
  ifMatch?: string;
  /** Sent on creates so that a form submitted twice (a double click, a retried post) creates once. */
  idempotencyKey?: string;
}

export interface ApiAnswer<Body> {
  status: number;
  body: Body;
  etag: string | undefined;
}

/** A page of any list endpoint (`GET` collections answer this shape). */
export interface ListPage<Item> {
  object: 'list';
  data: Item[];
  has_more: boolean;
  next_cursor: string | null;
}

function problemOf(status: number, body: unknown, headers: Headers): ApiProblem {
  const problem = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const text = (value: unknown, fallback: string) => (typeof value === 'string' && value.length > 0 ? value : fallback);
  const errors = Array.isArray(problem.errors) ? (problem.errors as FieldProblem[]).filter((entry) => typeof entry?.field === 'string') : [];
  const retryAfter = Number(headers.get('retry-after') ?? NaN);
  return new ApiProblem(
    status,
    text(problem.code, `http_${status}`),
    text(problem.title, 'The request failed'),
    text(problem.detail, text(problem.title, `The API answered ${status}.`)),
    errors,
    text(problem.request_id, '') || headers.get('x-request-id') || undefined,
    Number.isFinite(retryAfter) ? retryAfter : undefined,
  );
}

/**
 * The public REST API through the gateway, with the signed-in user's token: the same throttle
 * classes, scopes and audit trail as any other client, the user named as the actor.
 */
export class ApiClient {
  constructor(
    private readonly gatewayUrl: string,
    private readonly accessToken: string,
  ) {}

  // The pages read the few fields they show from the API's JSON; `any` by default spares each a type of its own.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async request<Body = any>(method: string, path: string, options: ApiRequest = {}): Promise<ApiAnswer<Body>> {
    const url = new URL(`${this.gatewayUrl}${path}`);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined && value !== '') url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { authorization: `Bearer ${this.accessToken}`, accept: 'application/json' };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (options.ifMatch) headers['if-match'] = options.ifMatch;
    if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
    const response = await fetch(url, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    const body = text.length > 0 && (response.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : undefined;
    if (response.status >= 400) throw problemOf(response.status, body, response.headers);
    return { status: response.status, body: body as Body, etag: response.headers.get('etag') ?? undefined };
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  get<Body = any>(path: string, query?: Query) {
    return this.request<Body>('GET', path, query ? { query } : {}).then((answer) => answer.body);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  list<Item = any>(path: string, query?: Query) {
    return this.get<ListPage<Item>>(path, query);
  }
}
