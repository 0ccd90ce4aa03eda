/**
 * Where the gRPC helpers connect, and the lazy load of what they run on. Nothing here imports
 * @grpc/grpc-js or @bufbuild/protobuf: a program that only calls REST never loads them (nor needs
 * them installed). The first gRPC call loads ./runtime.js, which does.
 */
import { ConfigurationError } from '../core/errors.js';
import type { TokenCache } from '../core/tokens.js';
import { VERSION } from '../version.js';
import type { GrpcRuntime } from './runtime.js';

export const DEFAULT_GRPC_PORT = 50051;
const INSTALL_HINT = 'npm install @grpc/grpc-js@^1.14.0 @bufbuild/protobuf@^2.17.0';

export interface GrpcTarget {
  /** `host:port`, as grpc-js takes it. */
  address: string;
  tls: boolean;
}

/**
 * The address of the gRPC port: the `grpcUrl` option, else `MERX_GRPC_URL`, else the REST base
 * URL's host on 50051. `grpcs://` (or `https://`) means TLS and `grpc://` (or `http://`)
 * plaintext; a bare `host:port` (what dev.json's `grpc_url` holds) follows the base URL's scheme.
 */
export function grpcTargetOf(grpcUrl: string | undefined, baseUrl: string): GrpcTarget {
  const restTls = baseUrl.startsWith('https:');
  if (grpcUrl === undefined) return { address: `${hostOf(new URL(baseUrl))}:${DEFAULT_GRPC_PORT}`, tls: restTls };
  const scheme = /^([a-z]+):\/\//i.exec(grpcUrl)?.[1]?.toLowerCase();
  if (scheme !== undefined && !['grpc', 'grpcs', 'http', 'https'].includes(scheme)) {
    throw new ConfigurationError(`grpcUrl must be host:port, grpc://host:port or grpcs://host:port, got "${grpcUrl}"`);
  }
  let url: URL;
  try {
    url = new URL(scheme === undefined ? `grpc://${grpcUrl}` : grpcUrl);
  } catch {
    throw new ConfigurationError(`grpcUrl must be host:port, grpc://host:port or grpcs://host:port, got "${grpcUrl}"`);
  }
  if (url.hostname === '' || (url.pathname !== '' && url.pathname !== '/')) {
    throw new ConfigurationError(`grpcUrl must be host:port, grpc://host:port or grpcs://host:port, got "${grpcUrl}"`);
  }
  const tls = scheme === undefined ? restTls : scheme === 'grpcs' || scheme === 'https';
  const port = url.port || (scheme === 'https' || scheme === 'grpcs' ? '443' : String(DEFAULT_GRPC_PORT));
  return { address: `${hostOf(url)}:${port}`, tls };
}

function hostOf(url: URL): string {
  return url.hostname; // an IPv6 host keeps its brackets here, as grpc-js wants it
}

export interface GrpcSettings {
  target: GrpcTarget;
  tokens: TokenCache;
  maxRetries: number;
}

/** One channel per client, opened on the first gRPC call and shared by every later one. */
export class GrpcConnection {
  private runtime: Promise<GrpcRuntime> | undefined;
  readonly userAgent = `merx-node/${VERSION}`;

  constructor(readonly settings: GrpcSettings) {}

  load(): Promise<GrpcRuntime> {
    this.runtime ??= import('./runtime.js').then(
      ({ GrpcRuntime }) => new GrpcRuntime(this),
      (cause: unknown) => {
        this.runtime = undefined; // installed later in a long-lived process: try again then
        if (isMissingPeer(cause)) {
          throw new ConfigurationError(`The gRPC helpers need @grpc/grpc-js and @bufbuild/protobuf beside @merx/sdk: ${INSTALL_HINT}`, { cause });
        }
        throw cause;
      },
    );
    return this.runtime;
  }

  /** Closes the channel, if one was opened; a later gRPC call opens a new one. */
  async close(): Promise<void> {
    const runtime = this.runtime;
    this.runtime = undefined;
    if (runtime) (await runtime.catch(() => undefined))?.close();
  }
}

function isMissingPeer(cause: unknown): boolean {
  const error = cause as { code?: unknown; message?: unknown } | undefined;
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' && error?.code !== 'MODULE_NOT_FOUND') return false;
  return typeof error.message === 'string' && /@grpc\/grpc-js|@bufbuild\/protobuf/.test(error.message);
}
