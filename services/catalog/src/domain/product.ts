import { Conflict, fieldPath, ValidationFailed, type FieldError } from '@merx/kit';
import { formatAmount, isCurrency, minorUnitsOf, parseAmount } from '@merx/kit';

export const PRODUCT_STATUSES = ['draft', 'active', 'archived'] as const;
export type ProductStatus = (typeof PRODUCT_STATUSES)[number];

export interface Product {
  id: string;
  merchantId: string;
  sku: string;
  title: string;
  description: string | null;
  /** Canonical decimal string with exactly the currency's minor units. */
  price: string;
  currency: string;
  status: ProductStatus;
  inventoryQuantity: number | null;
  attributes: Record<string, string>;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export type NewProduct = Pick<Product, 'sku' | 'title' | 'description' | 'price' | 'currency' | 'status' | 'inventoryQuantity' | 'attributes'>;
export type ProductChanges = Partial<NewProduct>;

/** Allowed moves: draft → active → archived → active. Anything else is a state clash (409). */
const TRANSITIONS: Record<ProductStatus, readonly ProductStatus[]> = {
  draft: ['active'],
  active: ['archived'],
  archived: ['active'],
};

const SKU = /^[A-Za-z0-9._-]{1,64}$/;
const MAX_TITLE = 255;
const MAX_DESCRIPTION = 10_000;
const MAX_ATTRIBUTES = 50;
const MAX_ATTRIBUTE_KEY = 64;
const MAX_ATTRIBUTE_VALUE = 500;
const MAX_INVENTORY = 2_147_483_647;
const FIELDS = ['sku', 'title', 'description', 'price', 'currency', 'status', 'inventory_quantity', 'attributes'] as const;

type Body = Record<string, unknown>;

class FieldChecker {
  readonly errors: FieldError[] = [];
  fail(field: string, code: string, message: string): undefined {
    this.errors.push({ field, code, message });
    return undefined;
  }
}

function asObject(body: unknown): Body {
  if (body === undefined) throw new ValidationFailed([{ field: '(body)', code: 'required', message: 'a JSON object body is required' }]);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationFailed([{ field: '(body)', code: 'invalid_type', message: 'the body must be a JSON object' }]);
  }
  return body as Body;
}

function rejectUnknownFields(body: Body, check: FieldChecker): void {
  for (const key of Object.keys(body)) {
    if (!(FIELDS as readonly string[]).includes(key)) check.fail(fieldPath('', key), 'unknown_field', `${key} is not a product field`);
  }
}

function checkSku(value: unknown, check: FieldChecker): string | undefined {
  if (typeof value !== 'string') return check.fail('sku', 'invalid_type', 'sku must be a string');
  if (!SKU.test(value)) return check.fail('sku', 'invalid_format', 'sku must be 1-64 characters of A-Z, a-z, 0-9, ".", "_" or "-"');
  return value;
}

function checkTitle(value: unknown, check: FieldChecker): string | undefined {
  if (typeof value !== 'string') return check.fail('title', 'invalid_type', 'title must be a string');
  const length = [...value].length;
  if (value.trim().length === 0) return check.fail('title', 'too_short', 'title must not be empty');
  if (length > MAX_TITLE) return check.fail('title', 'too_long', `title must be at most ${MAX_TITLE} characters`);
  return value;
}

function checkDescription(value: unknown, check: FieldChecker): string | null | undefined {
  if (value === null) return null;
  if (typeof value !== 'string') return check.fail('description', 'invalid_type', 'description must be a string or null');
  if ([...value].length > MAX_DESCRIPTION) return check.fail('description', 'too_long', `description must be at most ${MAX_DESCRIPTION} characters`);
  return value;
}

function checkCurrency(value: unknown, check: FieldChecker): string | undefined {
  if (typeof value !== 'string') return check.fail('currency', 'invalid_type', 'currency must be a string');
  if (!isCurrency(value)) return check.fail('currency', 'invalid_currency', 'currency must be an ISO 4217 code in upper case, e.g. USD');
  return value;
}

/** Checks the price against the currency; returns the canonical string ("19.9" USD → "19.90"). */
function checkPrice(value: unknown, currency: string | undefined, check: FieldChecker): string | undefined {
  if (typeof value !== 'string') {
    return check.fail('price', 'invalid_decimal', 'price must be a decimal string such as "19.99" (not a number)');
  }
  if (currency === undefined) return undefined; // the currency error already explains the request
  const parsed = parseAmount(value, currency);
  if ('problem' in parsed) {
    if (parsed.problem === 'too_many_decimals') {
      return check.fail('price', 'too_many_decimals', `${currency} allows ${parsed.allowedDecimals} decimal places; got "${value}"`);
    }
    if (parsed.problem === 'too_large') return check.fail('price', 'too_large', 'price must be below 10^15');
    return check.fail('price', 'invalid_decimal', 'price must be a non-negative decimal string such as "19.99"');
  }
  return formatAmount(parsed.minor, currency);
}

function checkStatus(value: unknown, allowed: readonly ProductStatus[], check: FieldChecker): ProductStatus | undefined {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    return check.fail('status', 'invalid_value', `status must be one of ${allowed.join(', ')}`);
  }
  return value as ProductStatus;
}

function checkInventory(value: unknown, check: FieldChecker): number | null | undefined {
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value)) return check.fail('inventory_quantity', 'invalid_type', 'inventory_quantity must be an integer');
  if (value < 0 || value > MAX_INVENTORY) return check.fail('inventory_quantity', 'out_of_range', `inventory_quantity must be from 0 to ${MAX_INVENTORY}`);
  return value;
}

function checkAttributes(value: unknown, check: FieldChecker): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return check.fail('attributes', 'invalid_type', 'attributes must be an object of string values');
  }
  const entries = Object.entries(value);
  if (entries.length > MAX_ATTRIBUTES) return check.fail('attributes', 'too_many_keys', `attributes may have at most ${MAX_ATTRIBUTES} keys`);
  const result: Record<string, string> = {};
  for (const [key, item] of entries) {
    if (key.length === 0 || key.length > MAX_ATTRIBUTE_KEY) check.fail(fieldPath('attributes', key), 'invalid_key', `attribute keys must be 1-${MAX_ATTRIBUTE_KEY} characters`);
    else if (typeof item !== 'string') check.fail(fieldPath('attributes', key), 'invalid_type', 'attribute values must be strings');
    else if ([...item].length > MAX_ATTRIBUTE_VALUE) check.fail(fieldPath('attributes', key), 'too_long', `attribute values must be at most ${MAX_ATTRIBUTE_VALUE} characters`);
    else result[key] = item;
  }
  return result;
}

export function validateNewProduct(input: unknown): NewProduct {
  const body = asObject(input);
  const check = new FieldChecker();
  rejectUnknownFields(body, check);
  for (const field of ['sku', 'title', 'price', 'currency'] as const) {
    if (body[field] === undefined || body[field] === null) check.fail(field, 'required', `${field} is required`);
  }
  const sku = body.sku === undefined || body.sku === null ? undefined : checkSku(body.sku, check);
  const title = body.title === undefined || body.title === null ? undefined : checkTitle(body.title, check);
  const currency = body.currency === undefined || body.currency === null ? undefined : checkCurrency(body.currency, check);
  const price = body.price === undefined || body.price === null ? undefined : checkPrice(body.price, currency, check);
  const description = body.description === undefined ? null : checkDescription(body.description, check);
  const status = body.status === undefined ? 'active' : checkStatus(body.status, ['draft', 'active'], check);
  const inventoryQuantity = body.inventory_quantity === undefined ? null : checkInventory(body.inventory_quantity, check);
  const attributes = body.attributes === undefined ? {} : checkAttributes(body.attributes, check);
  if (check.errors.length > 0) throw new ValidationFailed(check.errors);
  return { sku: sku!, title: title!, description: description ?? null, price: price!, currency: currency!, status: status!, inventoryQuantity: inventoryQuantity ?? null, attributes: attributes! };
}

/** Validates a PATCH body against the product it would change (the price is checked in the resulting currency). */
export function validateProductChanges(input: unknown, current: Product): ProductChanges {
  const body = asObject(input);
  const check = new FieldChecker();
  rejectUnknownFields(body, check);
  const changes: ProductChanges = {};
  for (const field of ['sku', 'title', 'price', 'currency', 'status', 'attributes'] as const) {
    if (body[field] === null) check.fail(field, 'required', `${field} cannot be null`);
  }
  if (body.sku !== undefined && body.sku !== null) changes.sku = checkSku(body.sku, check);
  if (body.title !== undefined && body.title !== null) changes.title = checkTitle(body.title, check);
  if (body.description !== undefined) changes.description = checkDescription(body.description, check);
  if (body.currency !== undefined && body.currency !== null) changes.currency = checkCurrency(body.currency, check);
  const currency = body.currency === undefined ? current.currency : changes.currency;
  if (body.price !== undefined && body.price !== null) {
    changes.price = checkPrice(body.price, currency, check);
  } else if (changes.currency !== undefined && changes.currency !== current.currency) {
    // The stored price must still be exact in the new currency ("19.99" cannot become JPY).
    const trimmed = current.price.includes('.') ? current.price.replace(/0+$/, '').replace(/\.$/, '') : current.price;
    const parsed = parseAmount(trimmed, changes.currency);
    if ('problem' in parsed) {
      check.fail('price', 'too_many_decimals', `the current price ${current.price} is not exact in ${changes.currency} (${minorUnitsOf(changes.currency)} decimals); send a new price with the currency`);
    } else {
      changes.price = formatAmount(parsed.minor, changes.currency);
    }
  }
  if (body.status !== undefined && body.status !== null) changes.status = checkStatus(body.status, PRODUCT_STATUSES, check);
  if (body.inventory_quantity !== undefined) changes.inventoryQuantity = checkInventory(body.inventory_quantity, check);
  if (body.attributes !== undefined && body.attributes !== null) changes.attributes = checkAttributes(body.attributes, check);
  if (check.errors.length > 0) throw new ValidationFailed(check.errors);
  return changes;
}

export function assertTransition(from: ProductStatus, to: ProductStatus): void {
  if (from === to) return;
  if (!TRANSITIONS[from].includes(to)) {
    throw new Conflict(`A ${from} product cannot become ${to}; allowed: ${TRANSITIONS[from].join(', ') || 'none'}.`);
  }
}

/** Key order is no difference: jsonb hands attributes back in its own order, not the order they were sent in. */
function sameValue(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return a === b;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  return keys.length === Object.keys(right).length && keys.every((key) => Object.hasOwn(right, key) && left[key] === right[key]);
}

/** The fields that really change, so a PATCH that changes nothing bumps no version and emits no event. */
export function effectiveChanges(current: Product, changes: ProductChanges): ProductChanges {
  const effective: ProductChanges = {};
  for (const [key, value] of Object.entries(changes) as [keyof ProductChanges, unknown][]) {
    if (!sameValue(current[key], value)) (effective as Record<string, unknown>)[key] = value;
  }
  return effective;
}
