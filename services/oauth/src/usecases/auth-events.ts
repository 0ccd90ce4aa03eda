import { buildEvent, updateContext, type Actor, type Db, type Logger, type Outbox } from '@merx/kit';
import { findApiKeyClientByClientId } from '../store/accounts-store.js';
import { findUserByEmail } from '../store/users-store.js';

type GrantType = 'client_credentials' | 'authorization_code' | 'refresh_token';

interface TokenClaims {
  merchant_id?: string;
  client_id?: string;
  scope?: string;
  sub?: string;
}

/** The claims of a token this service just minted; no verification needed, only reading. */
function claimsOf(accessToken: unknown): TokenClaims | undefined {
  if (typeof accessToken !== 'string') return undefined;
  try {
    return JSON.parse(Buffer.from(accessToken.split('.')[1] ?? '', 'base64url').toString('utf8')) as TokenClaims;
  } catch {
    return undefined;
  }
}

/**
 * Sensitive acts of the token endpoint and the login page become events, so the merchant's
 * audit log holds them beside every state change. An attempt that names no merchant (an unknown
 * client, an unknown email) has no tenant to be recorded for; it is logged only.
 */
export function authEvents(deps: { db: Db; outbox: () => Outbox | undefined; logger: Logger }) {
  async function record(merchantId: string, actor: Actor, topic: 'auth.token_issued' | 'auth.denied', object: Record<string, unknown>): Promise<void> {
    const outbox = deps.outbox();
    if (!outbox) return;
    updateContext({ merchantId, actor });
    await outbox.transaction(async (_tx, emit) => emit(buildEvent(topic, merchantId, { object })));
  }
  const safely = (what: string, work: Promise<void>) => work.catch((error: unknown) => deps.logger.error({ err: error }, `could not record ${what}`));

  return {
    tokenIssued(grantType: string, accessToken: unknown): Promise<void> {
      const claims = claimsOf(accessToken);
      if (!claims?.merchant_id || !claims.client_id) return Promise.resolve();
      const actor: Actor = claims.sub?.startsWith('usr_')
        ? { type: 'user', id: claims.sub }
        : claims.client_id.startsWith('mx_')
          ? { type: 'api_key', id: claims.client_id }
          : { type: 'app', id: claims.client_id };
      return safely(
        'a token issuance',
        record(claims.merchant_id, actor, 'auth.token_issued', {
          id: claims.client_id,
          object: 'token_issuance',
          client_id: claims.client_id,
          grant_type: grantType as GrantType,
          scope: claims.scope ?? '',
        }),
      );
    },

    clientRefused(clientId: string | undefined): Promise<void> {
      if (!clientId?.startsWith('mx_')) return Promise.resolve();
      return safely(
        'a refused client',
        findApiKeyClientByClientId(deps.db, clientId).then(async (key) => {
          if (!key) return;
          await record(key.merchantId, { type: 'api_key', id: clientId }, 'auth.denied', {
            id: clientId,
            object: 'auth_attempt',
            reason: 'invalid_client',
            client_id: clientId,
          });
        }),
      );
    },

    loginRefused(email: string, clientId: string | undefined): Promise<void> {
      return safely(
        'a refused login',
        (email ? findUserByEmail(deps.db, email) : Promise.resolve(undefined)).then(async (user) => {
          if (!user) return;
          await record(user.merchantId, { type: 'user', id: user.id }, 'auth.denied', {
            id: user.id,
            object: 'auth_attempt',
            reason: 'wrong_password',
            client_id: clientId ?? null,
          });
        }),
      );
    },
  };
}
