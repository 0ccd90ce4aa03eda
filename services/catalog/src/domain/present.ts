import type { Product, ProductChanges } from './product.js';

/** The wire shape of a product (snake_case, ISO times), shared by responses and event payloads. */
export function presentProduct(product: Product) {
  return {
    id: product.id,
    object: 'product' as const,
    sku: product.sku,
    title: product.title,
    description: product.description,
    price: product.price,
    currency: product.currency,
    status: product.status,
    inventory_quantity: product.inventoryQuantity,
    attributes: product.attributes,
    version: product.version,
    created_at: product.createdAt.toISOString(),
    updated_at: product.updatedAt.toISOString(),
  };
}

export type ProductResource = ReturnType<typeof presentProduct>;

/** `previous` in products.updated: the changed fields as they were, in wire names. */
export function presentPrevious(before: Product, changes: ProductChanges): Partial<ProductResource> {
  const wire = presentProduct(before);
  const previous: Record<string, unknown> = {};
  const names: Record<string, keyof ProductResource> = { inventoryQuantity: 'inventory_quantity' };
  for (const key of Object.keys(changes)) {
    const wireName = names[key] ?? (key as keyof ProductResource);
    previous[wireName] = wire[wireName];
  }
  return previous as Partial<ProductResource>;
}

/** Strong ETag: the version changes with every change, so it identifies the representation. */
export function productEtag(product: Pick<Product, 'version'>): string {
  return `"v${product.version}"`;
}
