// oidc-provider 8 ships no type declarations. This covers only the surface Merx uses; if
// @types/oidc-provider is ever added as a dependency, delete this file.
declare module 'oidc-provider' {
  import type { EventEmitter } from 'node:events';
  import type { IncomingMessage, ServerResponse } from 'node:http';
  import type Koa from 'koa';

  export interface AdapterPayload {
    [key: string]: unknown;
    jti?: string;
    grantId?: string;
    userCode?: string;
    uid?: string;
    consumed?: unknown;
  }

  export interface Adapter {
    upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void>;
    find(id: string): Promise<AdapterPayload | undefined>;
    findByUserCode(userCode: string): Promise<AdapterPayload | undefined>;
    findByUid(uid: string): Promise<AdapterPayload | undefined>;
    consume(id: string): Promise<void>;
    destroy(id: string): Promise<void>;
    revokeByGrantId(grantId: string): Promise<void>;
  }

  /** oidc-provider takes JWKs as jose describes them. */
  export type JWK = import('jose').JWK;

  export interface ClientInstance {
    [key: string]: unknown;
    clientId: string;
    clientSecret?: string;
    scope?: string;
    compareClientSecret(actual: string): boolean | Promise<boolean>;
  }

  export interface ClientClass {
    prototype: ClientInstance;
    find(id: string): Promise<ClientInstance | undefined>;
  }

  export interface TokenInstance {
    [key: string]: unknown;
    jti?: string;
    scope?: string;
    clientId?: string;
    client?: ClientInstance;
    kind?: string;
  }

  export interface GrantInstance {
    [key: string]: unknown;
    jti?: string;
    accountId?: string;
    clientId?: string;
    addResourceScope(resource: string, scope: string): void;
    addOIDCScope(scope: string): void;
    /** Space separated. */
    getResourceScopeFiltered(resource: string, scopes: string[] | Set<string>): string;
    save(ttl?: number): Promise<string>;
    destroy(): Promise<void>;
  }

  export interface GrantClass {
    new (properties: { accountId: string; clientId: string }): GrantInstance;
    find(id: string): Promise<GrantInstance | undefined>;
  }

  export interface InteractionDetails {
    uid: string;
    returnTo: string;
    params: Record<string, unknown> & { client_id?: string; scope?: string };
    prompt: { name: 'login' | 'consent' | string; reasons: string[]; details: Record<string, unknown> & { missingResourceScopes?: Record<string, string[]> } };
    session?: { accountId?: string; uid?: string };
    grantId?: string;
    lastSubmission?: Record<string, unknown>;
  }

  export interface OIDCContext {
    params?: Record<string, unknown>;
    client?: ClientInstance;
    entities: Record<string, TokenInstance | ClientInstance | undefined>;
    route?: string;
  }

  export type KoaContextWithOIDC = Koa.ParameterizedContext & { oidc: OIDCContext };

  export type GrantHandler = (ctx: KoaContextWithOIDC, next: () => Promise<void>) => Promise<void> | void;

  // Configuration is a deep, feature-rich object; Merx builds it in one place and tests it.
  export type Configuration = Record<string, unknown>;

  /**
   * Not a Koa application in v8: it owns one, built on its own koa 2, which is why it is run
   * through `callback()` rather than on another app's (koa 3) context. Middleware given to
   * `use` runs on that koa 2 context, before the provider's own; koa 2's context is close
   * enough to koa 3's for the properties read here.
   */
  export class Provider extends EventEmitter {
    constructor(issuer: string, configuration?: Configuration);
    readonly issuer: string;
    proxy: boolean;
    use(middleware: Koa.Middleware): void;
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
    readonly Client: ClientClass;
    readonly Grant: GrantClass;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    /** Stores the interaction's result and returns the URL that resumes the authorization request. */
    interactionResult(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<string>;
    registerGrantType(
      name: string,
      handler: GrantHandler,
      params?: string | string[] | Set<string>,
      allowedDuplicateParameters?: string | string[] | Set<string>,
    ): void;
    urlFor(name: string, opt?: Record<string, unknown>): string;
  }

  export namespace errors {
    class OIDCProviderError extends Error {
      constructor(status: number, message: string);
      status: number;
      statusCode: number;
      expose: boolean;
      error: string;
      error_description?: string;
    }
    class InvalidClientAuth extends OIDCProviderError {
      constructor(detail?: string);
    }
    class InvalidScope extends OIDCProviderError {
      constructor(description?: string, scope?: string);
    }
    class InvalidTarget extends OIDCProviderError {
      constructor(description?: string);
    }
    class InvalidGrant extends OIDCProviderError {
      constructor(detail?: string);
    }
    class SessionNotFound extends OIDCProviderError {
      constructor(detail?: string);
    }
    class InvalidRequest extends OIDCProviderError {
      constructor(description?: string, code?: number);
    }
  }

  export default Provider;
}
