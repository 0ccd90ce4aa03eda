import { create, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  ProductResult_Outcome,
  ProductResultSchema,
  ProductSchema,
  ProductStatus,
  UpsertProductsResponseSchema,
  type Product as WireProduct,
  type ProductInput,
  type ProductResult,
} from '@merx/contracts/grpc';
import type { Product } from '../domain/product.js';
import type { BulkOutcome } from '../usecases/bulk-products.js';
import { encodeProductResultResponse, sizeProduct, type SizedProduct } from './product-encoding.js';

const STATUS_NAMES: Record<number, string> = { [ProductStatus.DRAFT]: 'draft', [ProductStatus.ACTIVE]: 'active', [ProductStatus.ARCHIVED]: 'archived' };
const STATUS_OF_NAME: Record<string, ProductStatus> = { draft: ProductStatus.DRAFT, active: ProductStatus.ACTIVE, archived: ProductStatus.ARCHIVED };

/**
 * An enum number the contract does not name (a newer client, a bad one) stays visible to the
 * domain's checks, which refuse it with the REST message instead of reading it as unspecified.
 */
export function statusNameOf(status: ProductStatus): string | undefined {
  if (status === ProductStatus.UNSPECIFIED) return undefined;
  return STATUS_NAMES[status] ?? `unknown enum value ${status}`;
}

/**
 * A ProductInput as the REST body it stands for, so both surfaces meet the same rules. An upsert
 * states the whole product: an absent description or inventory is null, absent attributes are
 * none; an unspecified status is `active` for a new product and unchanged for an existing one.
 * Empty strings are absent fields (proto3 cannot tell them apart), so a missing sku is `required`.
 */
export function restBodyOf(input: ProductInput | undefined): Record<string, unknown> {
  if (!input) return {};
  // Built member by member rather than by deleting the absent ones afterwards, which would leave
  // V8 an object in dictionary mode for every check that reads it.
  const body: Record<string, unknown> = {};
  if (input.sku !== '') body.sku = input.sku;
  if (input.title !== '') body.title = input.title;
  if (input.price !== '') body.price = input.price;
  if (input.currency !== '') body.currency = input.currency;
  body.description = input.description ?? null;
  body.inventory_quantity = input.inventoryQuantity ?? null;
  body.attributes = { ...input.attributes };
  const status = statusNameOf(input.status);
  if (status !== undefined) body.status = status;
  return body;
}

export function wireProductOf(product: Product): WireProduct {
  return create(ProductSchema, {
    id: product.id,
    sku: product.sku,
    title: product.title,
    ...(product.description === null ? {} : { description: product.description }),
    price: product.price,
    currency: product.currency,
    status: STATUS_OF_NAME[product.status] ?? ProductStatus.UNSPECIFIED,
    ...(product.inventoryQuantity === null ? {} : { inventoryQuantity: product.inventoryQuantity }),
    attributes: product.attributes,
    version: product.version,
    createTime: timestampFromDate(product.createdAt),
    updateTime: timestampFromDate(product.updatedAt),
  });
}

/** Tags, lengths and the fields of bounded size (id, currency, status, numbers, timestamps), generously. */
const FIXED_WIRE_BYTES = 160;
/** A tag and a length prefix: a field of up to 2 MiB needs at most 1 + 4 bytes. */
const FIELD_OVERHEAD = 5;

/**
 * At least the bytes `wireProductOf(product)` encodes to within a message (never less), from the
 * lengths measured for encoding it: what lets an export close a page before it grows past its byte budget.
 */
export function wireSizeBoundOf({ lengths }: SizedProduct): number {
  let bytes = FIXED_WIRE_BYTES + lengths.sku + lengths.title + lengths.price;
  if (lengths.description >= 0) bytes += FIELD_OVERHEAD + lengths.description;
  for (let index = 0; index < lengths.attributes.length; index += 2) bytes += 3 * FIELD_OVERHEAD + lengths.attributes[index]! + lengths.attributes[index + 1]!;
  return bytes;
}

const OUTCOMES = {
  created: ProductResult_Outcome.CREATED,
  updated: ProductResult_Outcome.UPDATED,
  unchanged: ProductResult_Outcome.UNCHANGED,
  failed: ProductResult_Outcome.FAILED,
};

export function wireResultOf(outcome: BulkOutcome): ProductResult {
  if (outcome.outcome === 'failed') {
    const { code, detail, errors } = outcome.problem;
    return create(ProductResultSchema, { index: outcome.index, sku: outcome.sku, outcome: OUTCOMES.failed, problem: { code, detail, violations: errors } });
  }
  return create(ProductResultSchema, { index: outcome.index, sku: outcome.sku, outcome: OUTCOMES[outcome.outcome], product: wireProductOf(outcome.product) });
}

/** An UpsertProductsResponse as the bytes it is sent as: written items by the catalog's own encoder, failed ones by protobuf-es. */
export function encodedUpsertAnswerOf(outcome: BulkOutcome): Uint8Array {
  if (outcome.outcome === 'failed') return toBinary(UpsertProductsResponseSchema, create(UpsertProductsResponseSchema, { result: wireResultOf(outcome) }));
  return encodeProductResultResponse(outcome.index, outcome.sku, OUTCOMES[outcome.outcome], sizeProduct(outcome.product));
}

/** The first byte of an answer to one product: UpsertProductsResponse.result, field 1, length-delimited. */
const RESULT_TAG = (1 << 3) | 2;
/** UpsertProductsResponse.results, field 2, length-delimited. */
const RESULTS_TAG = (2 << 3) | 2;

/**
 * The answer to a page of products, from the answers its items would have had alone. Each of
 * those is `result` (field 1) and nothing else, and `results` (field 2) holds the same
 * ProductResult bytes under tag 2: so the page is the answers end to end, each with its first
 * byte retagged, and no product is encoded twice.
 */
export function encodedUpsertPageOf(answers: Uint8Array[]): Uint8Array {
  const page = Buffer.concat(answers);
  let at = 0;
  for (const answer of answers) {
    if (answer[0] !== RESULT_TAG) throw new Error('an upsert answer must be a lone result field');
    page[at] = RESULTS_TAG;
    at += answer.length;
  }
  return page;
}
