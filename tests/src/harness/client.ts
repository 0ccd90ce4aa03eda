import assert from 'node:assert/strict';
import { createContractValidator } from '@merx/contracts';
import type { Stack } from './stack.js';

const validator = createContractValidator();

export interface ApiResponse<Body = any> {
  status: number;
  headers: Headers;
  body: Body;
  text: string;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  /** Sent as is, for malformed and oversized bodies. */
  rawBody?: string;
  contentType?: string;
  headers?: Record<string, string>;
  /** Skip the contract check for responses the document does not describe on purpose. */
  unchecked?: boolean;
}

/** Drives the gateway as a client would, and checks every response against the OpenAPI document. */
export async function call<Body = any>(stack: Pick<Stack, 'baseUrl'>, method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<Body>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  const response = await fetch(`${stack.baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  const parsed = contentType.includes('json') && text.length > 0 ? JSON.parse(text) : text;
  if (!options.unchecked) {
    const problems = validator.validateResponse({ method, path, status: response.status, contentType, body: parsed, headers: response.headers });
    assert.deepEqual(
      problems,
      [],
      `${method} ${path} → ${response.status} does not match the OpenAPI document:\n${problems.join('\n')}\n${text.slice(0, 500)}`,
    );
  }
  recordStateChange(method, path, response.status, response.headers, options.token, parsed);
  return { status: response.status, headers: response.headers, body: parsed as Body, text };
}

export interface StateChangingCall {
  method: string;
  path: string;
  status: number;
  requestId: string;
  /** The tenant the call acted for: from the bearer token, or the merchant an operator created. */
  merchantId: string | undefined;
}

/** Every successful write the suite made, so the audit completeness test can look each one up. */
export const stateChangingCalls: StateChangingCall[] = [];

/** The first API key of every merchant the suite provisioned, to read its audit log at the end. */
const merchantKeys = new Map<string, string>();
export const apiKeyOfMerchant = (merchantId: string): string | undefined => merchantKeys.get(merchantId);

function merchantOfToken(token: string | undefined): string | undefined {
  const payload = token?.split('.')[1];
  if (!payload) return undefined;
  try {
    return (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { merchant_id?: string }).merchant_id;
  } catch {
    return undefined;
  }
}

function recordStateChange(method: string, path: string, status: number, headers: Headers, token: string | undefined, body: unknown): void {
  if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(method) || status < 200 || status >= 300) return;
  if (!path.startsWith('/api/v1/') && !path.startsWith('/admin/v1/')) return;
  const provisioned = body as { merchant?: { id?: string }; api_key?: { secret?: string } } | undefined;
  const created = provisioned?.merchant?.id;
  if (created && provisioned?.api_key?.secret) merchantKeys.set(created, provisioned.api_key.secret);
  const named = /\/admin\/v1\/merchants\/(mch_[0-9a-z]{26})/.exec(path)?.[1];
  stateChangingCalls.push({ method, path, status, requestId: headers.get('x-request-id') ?? '', merchantId: merchantOfToken(token) ?? created ?? named });
}

export interface TestMerchant {
  merchantId: string;
  apiKey: string;
  clientId: string;
  token: string;
  /** The owner user, who signs in on the app consent pages. */
  ownerEmail: string;
  ownerPassword: string;
}

export async function issueToken(stack: Pick<Stack, 'baseUrl'>, apiKey: string, scope?: string): Promise<string> {
  const clientId = apiKey.split('_').slice(0, 3).join('_');
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (scope !== undefined) form.set('scope', scope);
  const response = await fetch(`${stack.baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${clientId}:${apiKey}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: form,
  });
  const body = (await response.json()) as { access_token?: string; error?: string };
  assert.equal(response.status, 200, `token request failed: ${JSON.stringify(body)}`);
  return body.access_token!;
}

/** Owner emails are unique across Merx, so every test merchant gets a fresh one. */
export function uniqueOwnerEmail(): string {
  return `owner-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}@example.com`;
}

/** Each test makes its own merchant through the operator API, then a token with all of its key's scopes. */
export async function createMerchant(stack: Pick<Stack, 'baseUrl' | 'operatorToken'>, overrides: Record<string, unknown> = {}): Promise<TestMerchant> {
  const response = await call(stack, 'POST', '/admin/v1/merchants', {
    headers: { authorization: `Bearer ${stack.operatorToken}` },
    body: { name: `Test merchant ${Math.random().toString(36).slice(2, 8)}`, owner: { email: uniqueOwnerEmail() }, ...overrides },
  });
  assert.equal(response.status, 201, response.text);
  const apiKey = response.body.api_key.secret as string;
  const token = await issueToken(stack, apiKey);
  await merchantKnownEverywhere(stack, token);
  return {
    merchantId: response.body.merchant.id,
    ownerEmail: response.body.owner.email,
    ownerPassword: response.body.owner.password ?? (overrides.owner as { password?: string } | undefined)?.password,
    apiKey,
    clientId: response.body.api_key.prefix,
    token,
  };
}

/**
 * Provisioning is done when the merchants service, which learns of a merchant from
 * merchants.created, answers for it: until then GET /api/v1/merchant is a 503.
 */
async function merchantKnownEverywhere(stack: Pick<Stack, 'baseUrl'>, token: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const response = await fetch(`${stack.baseUrl}/api/v1/merchant`, { headers: { authorization: `Bearer ${token}` } });
    await response.arrayBuffer();
    if (response.status === 200) return;
    if (Date.now() > deadline) throw new Error(`the merchants service did not learn of the new merchant within 15 s (last status ${response.status})`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
