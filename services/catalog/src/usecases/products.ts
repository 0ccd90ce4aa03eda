import {
  buildEvent,
  checkIfMatch,
  newId,
  NotFound,
  parsePageRequest,
  toListPage,
  ValidationFailed,
  type Db,
  type MerchantId,
  type MerxEvent,
  type Outbox,
} from '@merx/kit';
import { isCurrency } from '@merx/kit';
import {
  assertTransition,
  effectiveChanges,
  PRODUCT_STATUSES,
  validateNewProduct,
  validateProductChanges,
  type NewProduct,
  type Product,
  type ProductStatus,
} from '../domain/product.js';
import { presentPrevious, presentProduct, productEtag } from '../domain/present.js';
import {
  deleteProductForMerchant,
  findProductForMerchant,
  insertProductForMerchant,
  listProductsForMerchant,
  updateProductForMerchant,
  type ProductFilters,
} from '../store/products-store.js';

export interface ProductUseCaseDeps {
  db: Db;
  outbox: Outbox;
  now?: () => Date;
}

function parseFilters(query: Record<string, unknown>): ProductFilters {
  const filters: ProductFilters = {};
  const errors = [];
  if (query.status !== undefined) {
    if (typeof query.status === 'string' && (PRODUCT_STATUSES as readonly string[]).includes(query.status)) filters.status = query.status as ProductStatus;
    else errors.push({ field: 'status', code: 'invalid_value', message: `status must be one of ${PRODUCT_STATUSES.join(', ')}` });
  }
  if (query.sku !== undefined) {
    if (typeof query.sku === 'string') filters.sku = query.sku;
    else errors.push({ field: 'sku', code: 'invalid_type', message: 'sku must be given once' });
  }
  if (query.currency !== undefined) {
    if (isCurrency(query.currency)) filters.currency = query.currency;
    else errors.push({ field: 'currency', code: 'invalid_currency', message: 'currency must be an ISO 4217 code' });
  }
  if (errors.length > 0) throw new ValidationFailed(errors);
  return filters;
}

/**
 * Everything a new product holds is decided here, before it is written, and so is the
 * products.created announcing it: every way of creating a product (the API, the sandbox seed)
 * announces it the same way.
 */
export function newProductWithEvent(merchantId: MerchantId, input: NewProduct, createdAt: Date): { product: Product; event: MerxEvent } {
  const product: Product = { id: newId('prod'), merchantId, ...input, version: 1, createdAt, updatedAt: createdAt };
  return { product, event: buildEvent('products.created', merchantId, { object: presentProduct(product) }) };
}

export function productUseCases({ db, outbox, now = () => new Date() }: ProductUseCaseDeps) {
  return {
    async createProduct(merchantId: MerchantId, body: unknown): Promise<Product> {
      const input = validateNewProduct(body);
      // The event is known before the insert, so both are written by one statement.
      const { product, event } = newProductWithEvent(merchantId, input, now());
      return insertProductForMerchant(outbox.withEvents(db, [event]), merchantId, product.id, input, product.createdAt);
    },

    async getProduct(merchantId: MerchantId, id: string): Promise<Product> {
      const product = await findProductForMerchant(db, merchantId, id);
      if (!product) throw new NotFound('product', id);
      return product;
    },

    async listProducts(merchantId: MerchantId, query: Record<string, unknown>) {
      const page = parsePageRequest(query);
      const filters = parseFilters(query);
      const rows = await listProductsForMerchant(db, merchantId, page, filters);
      return toListPage(rows, page.limit, presentProduct);
    },

    async updateProduct(merchantId: MerchantId, id: string, body: unknown, ifMatch: string | undefined): Promise<Product> {
      return outbox.transaction(async (tx, emit) => {
        const current = await findProductForMerchant(tx, merchantId, id, { forUpdate: true });
        if (!current) throw new NotFound('product', id);
        checkIfMatch(ifMatch, productEtag(current));
        const changes = effectiveChanges(current, validateProductChanges(body, current));
        if (changes.status) assertTransition(current.status, changes.status);
        if (Object.keys(changes).length === 0) return current;
        const updated = await updateProductForMerchant(tx, merchantId, id, changes, now());
        emit(buildEvent('products.updated', merchantId, { object: presentProduct(updated), previous: presentPrevious(current, changes) }));
        return updated;
      });
    },

    async deleteProduct(merchantId: MerchantId, id: string, ifMatch: string | undefined): Promise<void> {
      await outbox.transaction(async (tx, emit) => {
        const current = await findProductForMerchant(tx, merchantId, id, { forUpdate: true });
        if (!current) throw new NotFound('product', id);
        checkIfMatch(ifMatch, productEtag(current));
        await deleteProductForMerchant(tx, merchantId, id);
        emit(buildEvent('products.deleted', merchantId, { object: presentProduct(current) }));
      });
    },
  };
}

export type ProductUseCases = ReturnType<typeof productUseCases>;
