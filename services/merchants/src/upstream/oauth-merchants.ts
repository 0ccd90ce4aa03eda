import { serviceAuthorization, Unavailable, type MerchantId } from '@merx/kit';
import type { MerchantResource } from '../domain/merchant.js';

/** The oauth service's account of one merchant, as merchants.created carried it; undefined when it has none. */
export type MerchantLookup = (merchantId: MerchantId) => Promise<MerchantResource | undefined>;

/** `GET /internal/v1/merchants/:id` of the oauth service, with the service credential. */
export function httpMerchantLookup(oauthUrl: string, serviceToken: string, options: { timeoutMs?: number } = {}): MerchantLookup {
  return async (merchantId) => {
    let response: Response;
    try {
      response = await fetch(`${oauthUrl}/internal/v1/merchants/${encodeURIComponent(merchantId)}`, {
        headers: serviceAuthorization(serviceToken),
        signal: AbortSignal.timeout(options.timeoutMs ?? 3_000),
      });
    } catch (error) {
      throw new Unavailable("The merchant's settings are being set up; retry in a moment.", error);
    }
    if (response.status === 404) return undefined;
    if (response.status !== 200) throw new Unavailable("The merchant's settings are being set up; retry in a moment.");
    return (await response.json()) as MerchantResource;
  };
}
