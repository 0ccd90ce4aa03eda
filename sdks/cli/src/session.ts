/**
 * One run's credentials and clients. The key comes from `--api-key`, else `MERX_API_KEY`, else
 * the profile (`--profile`, else `MERX_PROFILE`, else `default`); the URLs likewise from their
 * flag, their variable, the profile, then the defaults. The access token is cached per profile
 * and key in the config directory, shared by REST (through the SDK's tokenStore) and gRPC.
 */
import { readFileSync } from 'node:fs';
import { ConfigurationError, DEFAULT_BASE_URL, Merx, type StoredToken, type TokenStore } from '@merx/sdk';
import { ConfigStore, configDir, writePrivateFile, type Profile } from './config.js';
import { UsageError } from './errors.js';

export interface GlobalOptions {
  apiKey?: string;
  profile?: string;
  baseUrl?: string;
  grpcUrl?: string;
  json?: boolean;
}

const KEY_PATTERN = /^(mx_(?:test|live)_[0-9A-Za-z]+)_\S+$/;
/** Exchange again this long before expiry (half the lifetime when shorter), as the SDK does. */
const REFRESH_BEFORE_EXPIRY_MS = 60_000;

export function clientIdOf(apiKey: string): string {
  const match = KEY_PATTERN.exec(apiKey);
  if (!match) throw new UsageError('an API key looks like mx_test_<keyid>_<secret> (or mx_live_…)');
  return match[1]!;
}

/** A JSON file per profile and key, 0600; unreadable or malformed means "no token yet". */
export class FileTokenStore implements TokenStore {
  constructor(readonly file: string) {}

  load(): StoredToken | undefined {
    try {
      const token = JSON.parse(readFileSync(this.file, 'utf8')) as StoredToken;
      return typeof token.accessToken === 'string' && typeof token.expiresAt === 'number' && typeof token.refreshAt === 'number' ? token : undefined;
    } catch {
      return undefined;
    }
  }

  save(token: StoredToken): void {
    writePrivateFile(this.file, JSON.stringify(token));
  }
}

export class Session {
  readonly config: ConfigStore;
  readonly profileName: string;
  private readonly profileData: Profile | undefined;

  constructor(
    readonly options: GlobalOptions,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.config = new ConfigStore(configDir(env));
    this.profileName = options.profile ?? env.MERX_PROFILE ?? 'default';
    this.profileData = this.config.profile(this.profileName);
  }

  get profile(): Profile | undefined {
    return this.profileData;
  }

  /** Where the key came from, for `whoami`. */
  get keySource(): string {
    if (this.options.apiKey) return '--api-key';
    if (this.env.MERX_API_KEY) return 'MERX_API_KEY';
    return `profile ${this.profileName}`;
  }

  apiKey(): string {
    const key = this.options.apiKey ?? this.env.MERX_API_KEY ?? this.profileData?.api_key;
    if (!key) {
      throw new UsageError(
        `no API key: run \`merx login${this.profileName === 'default' ? '' : ` --profile ${this.profileName}`}\`, or pass --api-key or set MERX_API_KEY`,
      );
    }
    clientIdOf(key);
    return key;
  }

  baseUrl(): string {
    const url = this.options.baseUrl ?? this.env.MERX_BASE_URL ?? this.profileData?.base_url ?? DEFAULT_BASE_URL;
    try {
      new URL(url);
    } catch {
      throw new UsageError(`the base URL ${JSON.stringify(url)} is not a URL`);
    }
    return url.replace(/\/+$/, '');
  }

  /** `host:port` of the gRPC API: the flag, MERX_GRPC_URL, the profile, else the base URL's host on 50051. */
  grpcTarget(): string {
    const given = this.options.grpcUrl ?? this.env.MERX_GRPC_URL ?? this.profileData?.grpc_url;
    if (given) {
      const withoutScheme = given.replace(/^(grpc|http)s?:\/\//, '').replace(/\/+$/, '');
      if (!/^[^/\s]+:\d+$/.test(withoutScheme)) throw new UsageError(`the gRPC URL ${JSON.stringify(given)} is not host:port (or grpc://host:port)`);
      return withoutScheme;
    }
    return `${new URL(this.baseUrl()).hostname}:50051`;
  }

  tokenStore(): FileTokenStore {
    return new FileTokenStore(this.config.tokenFile(this.profileName, this.apiKey()));
  }

  private cachedClient: Merx | undefined;

  client(): Merx {
    if (!this.cachedClient) {
      try {
        this.cachedClient = new Merx({ apiKey: this.apiKey(), baseUrl: this.baseUrl(), tokenStore: this.tokenStore() });
      } catch (error) {
        if (error instanceof ConfigurationError) throw new UsageError(error.message);
        throw error;
      }
    }
    return this.cachedClient;
  }

  /**
   * An access token for gRPC: the cached one while it is fresh, else a new exchange (through the
   * SDK, so errors are its typed ones), saved where REST calls will find it too.
   */
  async accessToken(options: { fresh?: boolean } = {}): Promise<string> {
    const store = this.tokenStore();
    const cached = options.fresh ? undefined : store.load();
    if (cached && Date.now() < cached.refreshAt) return cached.accessToken;
    const apiKey = this.apiKey();
    const answer = (await this.client().oauth.token({ grant_type: 'client_credentials', client_id: clientIdOf(apiKey), client_secret: apiKey })) as {
      access_token: string;
      expires_in: number;
    };
    const lifetimeMs = answer.expires_in * 1000;
    const now = Date.now();
    store.save({
      accessToken: answer.access_token,
      expiresAt: now + lifetimeMs,
      refreshAt: now + Math.max(0, lifetimeMs - Math.min(REFRESH_BEFORE_EXPIRY_MS, lifetimeMs / 2)),
    });
    return answer.access_token;
  }
}

/** The claims of our own access token, read without checking (the server checks it): the merchant id for event envelopes. */
export function claimsOf(accessToken: string): Record<string, unknown> {
  const payload = accessToken.split('.')[1];
  if (!payload) return {};
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}
