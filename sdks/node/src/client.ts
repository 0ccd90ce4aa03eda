import { ConfigurationError } from './core/errors.js';
import { Requestor, type Credentials } from './core/requestor.js';
import { TokenCache, type TokenAnswer, type TokenStore } from './core/tokens.js';
import { MerxResources, OperatorResources } from './generated/resources.js';
import { GrpcConnection, grpcTargetOf } from './grpc/connection.js';
import { BulkResource } from './grpc/helpers.js';

export const DEFAULT_BASE_URL = 'http://localhost:8080';
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_RETRIES = 2;
const TOKEN_PATH = '/oauth/token';

interface CommonOptions {
  /** `MERX_BASE_URL`, else http://localhost:8080. */
  baseUrl?: string | undefined;
  /** Milliseconds per attempt; 60 000 by default. */
  timeout?: number | undefined;
  /** Retries of connection errors, 408, 409 idempotency_key_in_use, 429 and 5xx; 2 by default. */
  maxRetries?: number | undefined;
  /** Sent with every request. */
  defaultHeaders?: Record<string, string> | undefined;
  /** A fetch of your own (a proxy agent, instrumentation); the global fetch by default. */
  fetch?: typeof fetch | undefined;
}

export interface ClientOptions extends CommonOptions {
  /** `mx_<mode>_<keyid>_<secret>`; `MERX_API_KEY` when omitted. */
  apiKey?: string | undefined;
  /** Keeps the access token beyond this process (a CLI's per-profile cache); memory only by default. */
  tokenStore?: TokenStore | undefined;
  /**
   * The gRPC port, for `merx.bulk`, `merx.events.stream` and `merx.sources.records.ingest`:
   * `host:port`, `grpc://host:port` (plaintext) or `grpcs://host:port` (TLS). `MERX_GRPC_URL`
   * when omitted, else the base URL's host on port 50051.
   */
  grpcUrl?: string | undefined;
}

export interface OperatorOptions extends CommonOptions {
  /** The platform's operator credential; `MERX_OPERATOR_TOKEN` when omitted. */
  operatorToken?: string | undefined;
}

/**
 * The Merx API client.
 *
 *     const merx = new Merx({ apiKey: process.env.MERX_API_KEY });
 *     const product = await merx.products.create({ sku: 'TSHIRT-1', title: 'T-shirt', price: '19.99', currency: 'USD' });
 *     for await (const p of merx.products.list({ limit: 100 })) console.log(p.sku);
 *
 * The API key is exchanged for short-lived access tokens (OAuth 2.0 client credentials) on first
 * use; they are cached and refreshed before they expire. The key itself is sent only to the token
 * endpoint. Every resource of the API is a property (`products`, `webhooks.subscriptions`, …).
 */
export class Merx extends MerxResources {
  constructor(options: ClientOptions = {}) {
    const apiKey = options.apiKey ?? env('MERX_API_KEY');
    if (apiKey === undefined) throw new ConfigurationError('No API key: pass apiKey to new Merx({ apiKey }) or set MERX_API_KEY');
    const match = /^(mx_(?:test|live)_[0-9A-Za-z]+)_\S+$/.exec(apiKey);
    if (!match) throw new ConfigurationError('An API key looks like mx_test_<keyid>_<secret> (or mx_live_…)');
    const clientId = match[1]!;
    // The requestor needs the token cache and the cache exchanges through the requestor: the
    // closure reads it once both exist.
    let requestor: Requestor | undefined;
    const tokens = new TokenCache(() => exchangeKey(requestor!, clientId, apiKey), options.tokenStore);
    requestor = buildRequestor(options, { kind: 'oauth', tokens }, (baseUrl, maxRetries) => {
      const target = grpcTargetOf(options.grpcUrl ?? env('MERX_GRPC_URL'), baseUrl);
      return new GrpcConnection({ target, tokens, maxRetries });
    });
    super(requestor);
    this.bulk = new BulkResource(requestor);
    this.#grpc = requestor.grpc;
  }

  readonly #grpc: GrpcConnection | undefined;

  /**
   * Bulk work on the catalogue over gRPC (`upsertProducts`, `exportProducts`,
   * `batchCreateProducts`). Needs `@grpc/grpc-js` and `@bufbuild/protobuf` installed; they are
   * loaded on the first call.
   */
  readonly bulk: BulkResource;

  /**
   * Closes the gRPC channel, if a gRPC helper opened one (REST calls hold nothing open). Not
   * needed for a process to exit; for a long-lived process done with gRPC.
   */
  async close(): Promise<void> {
    await this.#grpc?.close();
  }
}

/**
 * The platform operator's API (`/admin/v1`): provisioning merchants and apps, throttle overrides,
 * signing key rotation, the bus's poison messages. It authenticates with the operator token, not
 * an API key, so it is a client of its own (PHP's `Merx\Operator`); retries, errors and options
 * behave exactly as in `Merx`.
 *
 *     const operator = new MerxOperator({ operatorToken: process.env.MERX_OPERATOR_TOKEN });
 *     const { merchant, api_key } = await operator.merchants.create({ name: 'Acme', owner: { email: 'owner@acme.test' } });
 */
export class MerxOperator extends OperatorResources {
  constructor(options: OperatorOptions = {}) {
    const token = options.operatorToken ?? env('MERX_OPERATOR_TOKEN');
    if (token === undefined) throw new ConfigurationError('No operator token: pass operatorToken or set MERX_OPERATOR_TOKEN');
    super(buildRequestor(options, { kind: 'static', token }));
  }
}

/** The client credentials grant: HTTP Basic with the key's client id and the whole key. */
async function exchangeKey(requestor: Requestor, clientId: string, apiKey: string): Promise<TokenAnswer> {
  const { body } = await requestor.request({
    method: 'POST',
    path: TOKEN_PATH,
    body: { grant_type: 'client_credentials' },
    encoding: 'form',
    authenticated: false,
    options: { headers: { Authorization: `Basic ${Buffer.from(`${clientId}:${apiKey}`).toString('base64')}` } },
  });
  const answer = body as { access_token?: unknown; expires_in?: unknown };
  if (typeof answer?.access_token !== 'string' || typeof answer.expires_in !== 'number') {
    throw new ConfigurationError(`${TOKEN_PATH} answered without access_token and expires_in`);
  }
  return { accessToken: answer.access_token, expiresIn: answer.expires_in };
}

function buildRequestor(options: CommonOptions, credentials: Credentials, grpc?: (baseUrl: string, maxRetries: number) => GrpcConnection): Requestor {
  const baseUrl = (options.baseUrl ?? env('MERX_BASE_URL') ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+/.test(baseUrl)) throw new ConfigurationError(`baseUrl must be an http(s) URL, got "${baseUrl}"`);
  const timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
  if (!(timeout > 0)) throw new ConfigurationError('timeout must be a positive number of milliseconds');
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new ConfigurationError('maxRetries must be 0 or more');
  const fetchImpl = options.fetch ?? globalThis.fetch;
  return new Requestor({
    baseUrl,
    credentials,
    timeout,
    maxRetries,
    defaultHeaders: options.defaultHeaders ?? {},
    fetch: fetchImpl,
    grpc: grpc?.(baseUrl, maxRetries),
  });
}

function env(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value === '' ? undefined : value;
}
