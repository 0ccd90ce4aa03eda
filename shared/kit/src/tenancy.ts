/**
 * A merchant id that came from a verified token (or an operator action), never from a URL or a
 * body. Store functions take this type first, so a query without a tenant does not type-check.
 */
export type MerchantId = string & { readonly __tenant: unique symbol };

/** Only for ids proven to be the caller's tenant: verified token claims, operator provisioning, tests. */
export function trustedMerchantId(id: string): MerchantId {
  return id as MerchantId;
}
