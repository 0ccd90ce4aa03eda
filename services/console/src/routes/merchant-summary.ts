import { LRUCache } from 'lru-cache';
import type { ApiClient } from '../api/client.js';

interface Summary {
  name: string;
  mode: string;
  readAt: number;
}

const CACHE_MS = 30_000;
const MAX_ENTRIES = 10_000;
// Freshness is judged by readAt, not by the cache: a stale summary still stands in when the API fails.
const summaries = new LRUCache<string, Summary>({ max: MAX_ENTRIES });

/**
 * The merchant's name and mode for the frame of every page, read through the API with the user's
 * own token and kept for half a minute, so a page costs one API call for its own data, not two.
 */
export async function merchantSummary(api: ApiClient, merchantId: string, now = Date.now()): Promise<Summary> {
  const cached = summaries.get(merchantId);
  if (cached && now - cached.readAt < CACHE_MS) return cached;
  let summary: Summary;
  try {
    const merchant = await api.get<{ name: string; mode: string }>('/api/v1/merchant');
    summary = { name: merchant.name, mode: merchant.mode, readAt: now };
  } catch {
    // The frame must not fail the page: the page's own call reports what is wrong.
    return cached ?? { name: merchantId, mode: 'unknown', readAt: 0 };
  }
  summaries.set(merchantId, summary);
  return summary;
}

/** After the profile changes, the frame shows the new name at once. */
export const forgetMerchantSummary = (merchantId: string) => summaries.delete(merchantId);
