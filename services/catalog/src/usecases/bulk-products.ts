import { buildEvent, Conflict, MerxError, type Db, type FieldError, type MerchantId, type MerxEvent, type Outbox, type Queryable } from '@merx/kit';
import {
  assertTransition,
  effectiveChanges,
  validateNewProduct,
  validateProductChanges,
  type NewProduct,
  type Product,
  type ProductChanges,
} from '../domain/product.js';
import { presentPrevious, presentProduct } from '../domain/present.js';
import { newProductWithEvent } from './products.js';
import {
  exportProductsForMerchant,
  findProductsBySkuForMerchant,
  insertProductsForMerchant,
  updateProductsForMerchant,
  type ProductFilters,
} from '../store/products-store.js';

/** One item of a bulk write: the REST request body of a product, and where it stood in its stream or batch. */
export interface BulkItem {
  index: number;
  body: Record<string, unknown>;
}

export type BulkOutcome =
  | { index: number; sku: string; outcome: 'created' | 'updated' | 'unchanged'; product: Product }
  | { index: number; sku: string; outcome: 'failed'; problem: { code: string; detail: string; errors: FieldError[] } };

/** A failure of one item: the REST problem it would have been. */
function failed(item: BulkItem, error: unknown): BulkOutcome {
  if (!(error instanceof MerxError) || !error.expose) throw error;
  const errors = (error.extensions.errors as FieldError[] | undefined) ?? [];
  return {
    index: item.index,
    sku: typeof item.body.sku === 'string' ? item.body.sku : '',
    outcome: 'failed',
    problem: { code: error.code, detail: error.message, errors },
  };
}

/** The most a chunk holds: one transaction, one outbox insert, bounded lock and memory. */
export const BULK_CHUNK_SIZE = 500;

/**
 * Items in order, cut into chunks of at most BULK_CHUNK_SIZE in which no sku repeats: a sku sent
 * twice is applied twice, the second time against what the first made.
 */
export function chunksOf(items: BulkItem[]): BulkItem[][] {
  const chunks: BulkItem[][] = [];
  let chunk: BulkItem[] = [];
  let skus = new Set<unknown>();
  for (const item of items) {
    if (chunk.length === BULK_CHUNK_SIZE || skus.has(item.body.sku)) {
      chunks.push(chunk);
      chunk = [];
      skus = new Set();
    }
    chunk.push(item);
    skus.add(item.body.sku);
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

interface Planned {
  inserts: Array<{ id: string; product: NewProduct }>;
  /** Existing products and their effective changes, written together after the plan. */
  updates: Array<{ current: Product; changes: ProductChanges }>;
  /** products.created of each new product, by id (built before the insert, as POST builds it). */
  creations: Map<string, MerxEvent>;
  outcomes: BulkOutcome[];
}

export function bulkProductUseCases({ db, outbox, now = () => new Date() }: { db: Db; outbox: Outbox; now?: () => Date }) {
  /**
   * One chunk in one transaction: new skus are created, existing ones updated by the same rules
   * as PATCH (the stored product's state machine, the price exact in its currency), and each
   * change writes its event to the outbox in the same transaction. No sku is twice in a chunk
   * (chunksOf). Results are returned only once the chunk has committed.
   */
  async function writeChunk(merchantId: MerchantId, items: BulkItem[], mode: 'create' | 'upsert'): Promise<BulkOutcome[]> {
    const attempt = () =>
      outbox.transaction(async (tx, emit) => {
        // One time for the chunk: the rows it writes and the events announcing them say the same.
        const at = now();
        const planned = await planChunk(tx, merchantId, items, mode, at);
        const stored = await insertProductsForMerchant(tx, merchantId, planned.inserts, at);
        const updated = await updateProductsForMerchant(tx, merchantId, planned.updates, at);
        const byId = new Map([...stored, ...updated].map((product) => [product.id, product]));
        const previous = new Map(planned.updates.map((update) => [update.current.id, update]));
        // Events in the order of the items, so followers see the stream's order.
        for (const outcome of planned.outcomes) {
          if (outcome.outcome === 'created') {
            emit(planned.creations.get(outcome.product.id)!);
            outcome.product = byId.get(outcome.product.id) ?? outcome.product;
          } else if (outcome.outcome === 'updated') {
            // Built from the row as stored (the new version, the canonical price), as PATCH builds it.
            const product = byId.get(outcome.product.id)!;
            const { current, changes } = previous.get(product.id)!;
            outcome.product = product;
            emit(buildEvent('products.updated', merchantId, { object: presentProduct(product), previous: presentPrevious(current, changes) }));
          }
        }
        return planned.outcomes;
      });
    try {
      return await attempt();
    } catch (error) {
      // Another writer created one of these skus between our read and our insert: read again once.
      if (error instanceof MerxError && error.code === 'conflict') return attempt();
      throw error;
    }
  }

  async function planChunk(tx: Queryable, merchantId: MerchantId, items: BulkItem[], mode: 'create' | 'upsert', createdAt: Date): Promise<Planned> {
    const skus = [...new Set(items.map((item) => item.body.sku).filter((sku): sku is string => typeof sku === 'string'))];
    const current = new Map((await findProductsBySkuForMerchant(tx, merchantId, skus, { forUpdate: true })).map((product) => [product.sku, product]));
    const planned: Planned = { inserts: [], updates: [], creations: new Map(), outcomes: [] };
    for (const item of items) {
      try {
        const existing = typeof item.body.sku === 'string' ? current.get(item.body.sku) : undefined;
        if (!existing) {
          const input = validateNewProduct(item.body);
          const { product, event } = newProductWithEvent(merchantId, input, createdAt);
          planned.inserts.push({ id: product.id, product: input });
          planned.creations.set(product.id, event);
          planned.outcomes.push({ index: item.index, sku: input.sku, outcome: 'created', product });
          current.set(input.sku, product);
          continue;
        }
        if (mode === 'create') {
          validateNewProduct(item.body);
          throw new Conflict(`A product with sku ${existing.sku} already exists.`);
        }
        const changes = effectiveChanges(existing, validateProductChanges(item.body, existing));
        if (changes.status) assertTransition(existing.status, changes.status);
        if (Object.keys(changes).length === 0) {
          planned.outcomes.push({ index: item.index, sku: existing.sku, outcome: 'unchanged', product: existing });
          continue;
        }
        planned.updates.push({ current: existing, changes });
        planned.outcomes.push({ index: item.index, sku: existing.sku, outcome: 'updated', product: existing });
      } catch (error) {
        planned.outcomes.push(failed(item, error));
      }
    }
    return planned;
  }

  async function writeAll(merchantId: MerchantId, items: BulkItem[], mode: 'create' | 'upsert'): Promise<BulkOutcome[]> {
    const outcomes: BulkOutcome[] = [];
    for (const chunk of chunksOf(items)) outcomes.push(...(await writeChunk(merchantId, chunk, mode)));
    return outcomes;
  }

  return {
    /** Creates only: an existing sku is a failed item (`conflict`), as POST /products would answer. */
    async createProducts(merchantId: MerchantId, items: BulkItem[]): Promise<BulkOutcome[]> {
      return writeAll(merchantId, items, 'create');
    },

    /** Creates or updates by sku, chunk by chunk; idempotent (the same item again is `unchanged`). */
    async upsertProducts(merchantId: MerchantId, items: BulkItem[]): Promise<BulkOutcome[]> {
      return writeAll(merchantId, items, 'upsert');
    },

    /** One page of an export, oldest first after `afterId`. */
    exportPage(merchantId: MerchantId, afterId: string | undefined, limit: number, filters: ProductFilters): Promise<Product[]> {
      return exportProductsForMerchant(db, merchantId, afterId, limit, filters);
    },
  };
}

export type BulkProductUseCases = ReturnType<typeof bulkProductUseCases>;
