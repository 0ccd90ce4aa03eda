import assert from 'node:assert/strict';
import Merx, {
  AuthenticationError,
  BadRequestError,
  ConfigurationError,
  ConflictError,
  MerxError,
  NotFoundError,
  PermissionDeniedError,
  UnprocessableEntityError,
} from '@merx/sdk';
import { merxServer, type Merchant, type MerxServer } from './support/server.js';

async function caught(promise: Promise<unknown>): Promise<MerxError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof MerxError, `expected a MerxError, got ${String(error)}`);
    return error;
  }
  assert.fail('the call succeeded');
}

describe('errors: a class per status, carrying the problem document and request id', function () {
  this.timeout(120_000);
  let server: MerxServer;
  let merchant: Merchant;
  let merx: Merx;

  before(async () => {
    server = await merxServer();
    merchant = await server.createMerchant();
    merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
  });

  it('404 NotFoundError', async () => {
    const error = await caught(merx.products.retrieve('prod_00000000000000000000000000'));
    assert.ok(error instanceof NotFoundError);
    assert.equal(error.status, 404);
    assert.equal(error.code, 'not_found');
    assert.ok(error.requestId, 'the request id of the answer');
    assert.equal(error.problem.status, 404);
    assert.ok(error.message.includes(error.requestId!));
  });

  it('422 UnprocessableEntityError with the field errors, 400 BadRequestError for a malformed body', async () => {
    const invalid = await caught(merx.products.create({ sku: 'BAD-1', title: 'Bad', price: '19.999', currency: 'USD' }));
    assert.ok(invalid instanceof UnprocessableEntityError, invalid.constructor.name);
    assert.equal(invalid.status, 422);
    assert.ok(
      invalid.errors.some((fieldError) => JSON.stringify(fieldError).includes('price')),
      JSON.stringify(invalid.errors),
    );
    // @ts-expect-error price is a decimal string: the types refuse a number, and so does the server
    const wrongType = await caught(merx.products.create({ sku: 'BAD-2', title: 'Bad', price: 12.5, currency: 'USD' }));
    assert.ok(wrongType instanceof UnprocessableEntityError || wrongType instanceof BadRequestError, wrongType.constructor.name);
    const malformed = await caught(merx.products.create('not an object' as never));
    assert.ok(malformed instanceof BadRequestError || malformed instanceof UnprocessableEntityError, malformed.constructor.name);
    assert.ok(malformed.title && malformed.requestId);
  });

  it('409 ConflictError for a duplicate sku', async () => {
    await merx.products.create({ sku: 'DUP-1', title: 'One', price: '1.00', currency: 'USD' });
    const error = await caught(merx.products.create({ sku: 'DUP-1', title: 'Two', price: '1.00', currency: 'USD' }));
    assert.ok(error instanceof ConflictError);
    assert.equal(error.status, 409);
    assert.ok(error.code);
  });

  it('401 AuthenticationError for a wrong key, 403 PermissionDeniedError for a missing scope', async () => {
    const wrong = new Merx({ apiKey: `${merchant.apiKey.slice(0, merchant.apiKey.lastIndexOf('_'))}_wrongsecret`, baseUrl: server.baseUrl, maxRetries: 0 });
    const unauthenticated = await caught(wrong.products.list());
    assert.ok(unauthenticated instanceof AuthenticationError);
    assert.equal(unauthenticated.status, 401);

    const readOnly = await merx.apiKeys.create({ name: 'read only', scopes: ['products:read'] });
    const limited = new Merx({ apiKey: readOnly.secret, baseUrl: server.baseUrl });
    assert.ok(Array.isArray((await limited.products.list()).data));
    const denied = await caught(limited.products.create({ sku: 'NOPE', title: 'No', price: '1.00', currency: 'USD' }));
    assert.ok(denied instanceof PermissionDeniedError);
    assert.equal(denied.status, 403);
  });

  it('no key is a ConfigurationError at construction', () => {
    const saved = process.env.MERX_API_KEY;
    delete process.env.MERX_API_KEY;
    try {
      assert.throws(() => new Merx({ baseUrl: server.baseUrl }), ConfigurationError);
      assert.throws(() => new Merx({ apiKey: 'not-a-key' }), ConfigurationError);
      assert.throws(() => new Merx({ apiKey: merchant.apiKey, baseUrl: 'ftp://x' }), ConfigurationError);
    } finally {
      if (saved !== undefined) process.env.MERX_API_KEY = saved;
    }
  });
});
