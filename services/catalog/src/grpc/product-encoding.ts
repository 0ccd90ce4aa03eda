import { ProductResult_Outcome, ProductStatus } from '@merx/contracts/grpc';
import type { Product } from '../domain/product.js';

/**
 * The bytes of the messages the bulk paths send most (merx.v1.Product in an export page or an
 * upsert's answer), written straight from the domain Product. protobuf-es would first build a
 * wire Product and two Timestamps (a bigint each), then walk their descriptors field by field into
 * chunks it joins; per product of an export that was most of the catalog's own work. The bytes are
 * exactly those `toBinary` writes for `wireProductOf(product)` (fields in number order, zero values
 * of plain fields left out, map entries with key and value), which product-encoding.spec.ts checks
 * against protobuf-es for every field, so a field added to the contract fails there first.
 */

const LENGTH_DELIMITED = 2;
const tagOf = (field: number, wireType: 0 | 2) => (field << 3) | wireType;

const STATUS_NUMBER: Record<string, number> = { draft: ProductStatus.DRAFT, active: ProductStatus.ACTIVE, archived: ProductStatus.ARCHIVED };

/** merx.v1.Product's field numbers. */
const PRODUCT = {
  id: 1,
  sku: 2,
  title: 3,
  description: 4,
  price: 5,
  currency: 6,
  status: 7,
  inventoryQuantity: 8,
  attributes: 9,
  version: 10,
  createTime: 11,
  updateTime: 12,
} as const;

/** Bytes of a varint of a non-negative integer below 2^53. */
function varintSize(value: number): number {
  let size = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    size++;
  }
  return size;
}

/** int32 and int64 as protobuf writes them: a negative number is ten bytes of two's complement. */
const signedVarintSize = (value: number) => (value < 0 ? 10 : varintSize(value));

const stringFieldSize = (bytes: number) => 1 + varintSize(bytes) + bytes;

interface TimestampParts {
  seconds: number;
  nanos: number;
}

/** google.protobuf.Timestamp of a Date, as timestampFromDate makes it: nanos never negative. */
function timestampOf(date: Date): TimestampParts {
  const ms = date.getTime();
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: (ms - seconds * 1000) * 1_000_000 };
}

function timestampSize({ seconds, nanos }: TimestampParts): number {
  return (seconds !== 0 ? 1 + signedVarintSize(seconds) : 0) + (nanos !== 0 ? 1 + varintSize(nanos) : 0);
}

/**
 * UTF-8 bytes of a string. Most of a product's strings are short ASCII (ids, skus, prices,
 * currencies), which a loop measures faster than a call into Buffer.byteLength.
 */
function utf8Length(value: string): number {
  if (value.length > SHORT_STRING) return Buffer.byteLength(value);
  for (let index = 0; index < value.length; index++) if (value.charCodeAt(index) >= 0x80) return Buffer.byteLength(value);
  return value.length;
}
const SHORT_STRING = 64;

/** Writes into a buffer sized beforehand. */
class Writer {
  position = 0;

  constructor(readonly bytes: Buffer) {}

  byte(value: number): void {
    this.bytes[this.position++] = value;
  }

  varint(value: number): void {
    while (value >= 128) {
      this.bytes[this.position++] = (value % 128) | 128;
      value = Math.floor(value / 128);
    }
    this.bytes[this.position++] = value;
  }

  signedVarint(value: number): void {
    if (value >= 0) return this.varint(value);
    // Two's complement in 64 bits, seven bits at a time: the high word carries the sign.
    let high = Math.floor(value / 2 ** 32) >>> 0;
    let low = (value - Math.floor(value / 2 ** 32) * 2 ** 32) >>> 0;
    for (let index = 0; index < 9; index++) {
      this.bytes[this.position++] = (low & 127) | 128;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    this.bytes[this.position++] = low & 1;
  }

  /** A string field of `length` UTF-8 bytes (from utf8Length): ASCII (as many bytes as characters) byte by byte, the rest by Buffer. */
  string(field: number, value: string, length: number): void {
    this.byte(tagOf(field, LENGTH_DELIMITED));
    this.varint(length);
    if (length === value.length && length <= SHORT_STRING) {
      for (let index = 0; index < length; index++) this.bytes[this.position++] = value.charCodeAt(index);
    } else {
      this.position += this.bytes.write(value, this.position, length, 'utf8');
    }
  }

  timestamp(field: number, parts: TimestampParts): void {
    this.byte(tagOf(field, LENGTH_DELIMITED));
    this.varint(timestampSize(parts));
    if (parts.seconds !== 0) {
      this.byte(tagOf(1, 0));
      this.signedVarint(parts.seconds);
    }
    if (parts.nanos !== 0) {
      this.byte(tagOf(2, 0));
      this.varint(parts.nanos);
    }
  }
}

/**
 * A product measured for encoding: the byte length of each of its strings and of the whole
 * message, so a page can be sized (and cut at its byte budget) before a byte is written.
 */
export interface SizedProduct {
  readonly product: Product;
  /** Bytes of the merx.v1.Product message. */
  readonly size: number;
  readonly lengths: {
    id: number;
    sku: number;
    title: number;
    /** -1 when there is none (the field is left out). */
    description: number;
    price: number;
    currency: number;
    status: number;
    /** Key and value bytes of each attribute, in the order of `attributeKeys`. */
    attributes: number[];
    created: TimestampParts;
    updated: TimestampParts;
  };
  readonly attributeKeys: string[];
}

export function sizeProduct(product: Product): SizedProduct {
  const lengths = {
    id: utf8Length(product.id),
    sku: utf8Length(product.sku),
    title: utf8Length(product.title),
    description: product.description === null ? -1 : utf8Length(product.description),
    price: utf8Length(product.price),
    currency: utf8Length(product.currency),
    status: STATUS_NUMBER[product.status] ?? ProductStatus.UNSPECIFIED,
    attributes: [] as number[],
    created: timestampOf(product.createdAt),
    updated: timestampOf(product.updatedAt),
  };
  const attributeKeys = Object.keys(product.attributes);
  let size = 0;
  for (const key of attributeKeys) {
    const keyBytes = utf8Length(key);
    const valueBytes = utf8Length(product.attributes[key]!);
    lengths.attributes.push(keyBytes, valueBytes);
    const entry = stringFieldSize(keyBytes) + stringFieldSize(valueBytes);
    size += 1 + varintSize(entry) + entry;
  }
  if (lengths.id > 0) size += stringFieldSize(lengths.id);
  if (lengths.sku > 0) size += stringFieldSize(lengths.sku);
  if (lengths.title > 0) size += stringFieldSize(lengths.title);
  if (lengths.description >= 0) size += stringFieldSize(lengths.description);
  if (lengths.price > 0) size += stringFieldSize(lengths.price);
  if (lengths.currency > 0) size += stringFieldSize(lengths.currency);
  if (lengths.status !== 0) size += 1 + varintSize(lengths.status);
  if (product.inventoryQuantity !== null) size += 1 + signedVarintSize(product.inventoryQuantity);
  if (product.version !== 0) size += 1 + signedVarintSize(product.version);
  size += 1 + varintSize(timestampSize(lengths.created)) + timestampSize(lengths.created);
  size += 1 + varintSize(timestampSize(lengths.updated)) + timestampSize(lengths.updated);
  return { product, size, lengths, attributeKeys };
}

/** Bytes a product adds to a message that embeds it (tag, length, message). */
export const embeddedSize = (sized: SizedProduct) => 1 + varintSize(sized.size) + sized.size;

function writeEmbeddedProduct(writer: Writer, field: number, { product, size, lengths, attributeKeys }: SizedProduct): void {
  writer.byte(tagOf(field, LENGTH_DELIMITED));
  writer.varint(size);
  if (lengths.id > 0) writer.string(PRODUCT.id, product.id, lengths.id);
  if (lengths.sku > 0) writer.string(PRODUCT.sku, product.sku, lengths.sku);
  if (lengths.title > 0) writer.string(PRODUCT.title, product.title, lengths.title);
  if (lengths.description >= 0) writer.string(PRODUCT.description, product.description!, lengths.description);
  if (lengths.price > 0) writer.string(PRODUCT.price, product.price, lengths.price);
  if (lengths.currency > 0) writer.string(PRODUCT.currency, product.currency, lengths.currency);
  if (lengths.status !== 0) {
    writer.byte(tagOf(PRODUCT.status, 0));
    writer.varint(lengths.status);
  }
  if (product.inventoryQuantity !== null) {
    writer.byte(tagOf(PRODUCT.inventoryQuantity, 0));
    writer.signedVarint(product.inventoryQuantity);
  }
  attributeKeys.forEach((key, index) => {
    const keyBytes = lengths.attributes[2 * index]!;
    const valueBytes = lengths.attributes[2 * index + 1]!;
    writer.byte(tagOf(PRODUCT.attributes, LENGTH_DELIMITED));
    writer.varint(stringFieldSize(keyBytes) + stringFieldSize(valueBytes));
    writer.string(1, key, keyBytes);
    writer.string(2, product.attributes[key]!, valueBytes);
  });
  if (product.version !== 0) {
    writer.byte(tagOf(PRODUCT.version, 0));
    writer.signedVarint(product.version);
  }
  writer.timestamp(PRODUCT.createTime, lengths.created);
  writer.timestamp(PRODUCT.updateTime, lengths.updated);
}

/** The field numbers the encoder writes, for the check that it writes every field the contract has. */
export const ENCODED_PRODUCT_FIELDS: Readonly<Record<string, number>> = PRODUCT;

/** merx.v1.ExportProductsResponse of a page: the products in `products` (field 2), in one buffer. */
export function encodeExportPage(products: SizedProduct[]): Buffer {
  let size = 0;
  for (const sized of products) size += embeddedSize(sized);
  const writer = new Writer(Buffer.allocUnsafe(size));
  for (const sized of products) writeEmbeddedProduct(writer, 2, sized);
  return writer.bytes;
}

/** merx.v1.ExportProductsResponse of one product in `product` (field 1), the page size 0 of old. */
export function encodeExportSingle(product: SizedProduct): Buffer {
  const writer = new Writer(Buffer.allocUnsafe(embeddedSize(product)));
  writeEmbeddedProduct(writer, 1, product);
  return writer.bytes;
}

/**
 * merx.v1.UpsertProductsResponse of an item that was written (or found unchanged): its
 * ProductResult with index, sku, outcome and the product. A failed item has no product; its
 * answer is rare and goes through protobuf-es.
 */
export function encodeProductResultResponse(index: number, sku: string, outcome: ProductResult_Outcome, product: SizedProduct): Buffer {
  const skuBytes = utf8Length(sku);
  const resultSize =
    (index !== 0 ? 1 + signedVarintSize(index) : 0) +
    (skuBytes > 0 ? stringFieldSize(skuBytes) : 0) +
    (outcome !== 0 ? 1 + varintSize(outcome) : 0) +
    embeddedSize(product);
  const writer = new Writer(Buffer.allocUnsafe(1 + varintSize(resultSize) + resultSize));
  writer.byte(tagOf(1, LENGTH_DELIMITED));
  writer.varint(resultSize);
  if (index !== 0) {
    writer.byte(tagOf(1, 0));
    writer.signedVarint(index);
  }
  if (skuBytes > 0) writer.string(2, sku, skuBytes);
  if (outcome !== 0) {
    writer.byte(tagOf(3, 0));
    writer.varint(outcome);
  }
  writeEmbeddedProduct(writer, 4, product);
  return writer.bytes;
}
