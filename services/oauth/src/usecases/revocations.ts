import type { Db, RevocationSnapshot } from '@merx/kit';
import { listSuspensionsSince } from '../store/accounts-store.js';
import { listKeyRevocationsSince } from '../store/api-keys-store.js';

/** The oauth service's own loader: straight from its tables, bounded by the token lifetime. */
export function revocationsFromStore(db: Db, maxTokenLifetimeSeconds: number): (since: Date) => Promise<RevocationSnapshot> {
  return async (since) => {
    const horizon = new Date(Date.now() - maxTokenLifetimeSeconds * 1000);
    const from = since > horizon ? since : horizon;
    const entries = [...(await listKeyRevocationsSince(db, from)), ...(await listSuspensionsSince(db, from))];
    return { entries, max_token_lifetime_seconds: maxTokenLifetimeSeconds };
  };
}
