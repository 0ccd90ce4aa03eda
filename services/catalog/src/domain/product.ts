import { Conflict, schemaErrors, ValidationFailed, type FieldError } from '@merx/kit';
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

type Body = Record<string, unknown>;

/**
 * The structure of a product (types, required members, lengths, the sku's and the price's shape,
 * unknown members) is the OpenAPI schema's, checked by the same code the HTTP edge runs; only what a
 * schema cannot state is here: the currency is one ISO 4217 knows, and the price is exact in the
 * currency's minor units. gRPC and batch items come through these functions too.
 */
function structureOf(schemaName: 'ProductCreate' | 'ProductUpdate', input: unknown): { body: Body; errors: FieldError[] } {
  const errors = schemaErrors(schemaName, input);
  // A body that is not an object has no members to check further.
  if (errors.some((error) => error.field === '(body)')) throw new ValidationFailed(errors);
  return { body: input as Body, errors };
}

const failed = (errors: FieldError[], field: string) => errors.some((error) => error.field === field);

function checkCurrency(value: string, errors: FieldError[]): string | undefined {
  if (isCurrency(value)) return value;
  errors.push({ field: 'currency', code: 'invalid_currency', message: 'currency must be an ISO 4217 code in upper case, e.g. USD' });
  return undefined;
}

/** Checks the price against the currency; returns the canonical string ("19.9" USD → "19.90"). */
function checkPrice(value: string, currency: string, errors: FieldError[]): string | undefined {
  const parsed = parseAmount(value, currency);
  if (!('problem' in parsed)) return formatAmount(parsed.minor, currency);
  if (parsed.problem === 'too_many_decimals') {
    errors.push({ field: 'price', code: 'too_many_decimals', message: `${currency} allows ${parsed.allowedDecimals} decimal places; got "${value}"` });
  } else if (parsed.problem === 'too_large') {
    errors.push({ field: 'price', code: 'too_large', message: 'price must be below 10^15' });
  } else {
    errors.push({ field: 'price', code: 'invalid_decimal', message: 'price must be a non-negative decimal string such as "19.99"' });
  }
  return undefined;
}

/** A title of spaces alone says nothing; the schema's minLength cannot tell it from a real one. */
function checkTitleNotBlank(value: unknown, errors: FieldError[]): void {
  if (typeof value === 'string' && value.length > 0 && value.trim().length === 0)
    errors.push({ field: 'title', code: 'too_short', message: 'title must not be blank' });
}

export function validateNewProduct(input: unknown): NewProduct {
  const { body, errors } = structureOf('ProductCreate', input);
  checkTitleNotBlank(body.title, errors);
  const currency = typeof body.currency === 'string' && !failed(errors, 'currency') ? checkCurrency(body.currency, errors) : undefined;
  const price = typeof body.price === 'string' && currency !== undefined && !failed(errors, 'price') ? checkPrice(body.price, currency, errors) : undefined;
  if (errors.length > 0) throw new ValidationFailed(errors);
  return {
    sku: body.sku as string,
    title: body.title as string,
    description: (body.description as string | null | undefined) ?? null,
    price: price!,
    currency: currency!,
    status: (body.status as ProductStatus | undefined) ?? 'active',
    inventoryQuantity: (body.inventory_quantity as number | null | undefined) ?? null,
    attributes: (body.attributes as Record<string, string> | undefined) ?? {},
  };
}

/** Validates a PATCH body against the product it would change (the price is checked in the resulting currency). */
export function validateProductChanges(input: unknown, current: Product): ProductChanges {
  const { body, errors } = structureOf('ProductUpdate', input);
  checkTitleNotBlank(body.title, errors);
  const changes: ProductChanges = {};
  if (body.sku !== undefined) changes.sku = body.sku as string;
  if (body.title !== undefined) changes.title = body.title as string;
  if (body.description !== undefined) changes.description = body.description as string | null;
  if (body.status !== undefined) changes.status = body.status as ProductStatus;
  if (body.inventory_quantity !== undefined) changes.inventoryQuantity = body.inventory_quantity as number | null;
  if (body.attributes !== undefined) changes.attributes = body.attributes as Record<string, string>;
  if (typeof body.currency === 'string' && !failed(errors, 'currency')) changes.currency = checkCurrency(body.currency, errors);
  const currency = body.currency === undefined ? current.currency : changes.currency;
  if (typeof body.price === 'string' && !failed(errors, 'price')) {
    if (currency !== undefined) changes.price = checkPrice(body.price, currency, errors);
  } else if (body.price === undefined && changes.currency !== undefined && changes.currency !== current.currency) {
    // The stored price must still be exact in the new currency ("19.99" cannot become JPY).
    const trimmed = current.price.includes('.') ? current.price.replace(/0+$/, '').replace(/\.$/, '') : current.price;
    const parsed = parseAmount(trimmed, changes.currency);
    if ('problem' in parsed) {
      errors.push({
        field: 'price',
        code: 'too_many_decimals',
        message: `the current price ${current.price} is not exact in ${changes.currency} (${minorUnitsOf(changes.currency)} decimals); send a new price with the currency`,
      });
    } else {
      changes.price = formatAmount(parsed.minor, changes.currency);
    }
  }
  if (errors.length > 0) throw new ValidationFailed(errors);
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
