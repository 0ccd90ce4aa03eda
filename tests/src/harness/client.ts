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
export async function call<Body = any>(stack: Stack, method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<Body>> {
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
    assert.deepEqual(problems, [], `${method} ${path} → ${response.status} does not match the OpenAPI document:\n${problems.join('\n')}\n${text.slice(0, 500)}`);
  }
  return { status: response.status, headers: response.headers, body: parsed as Body, text };
}

export interface TestMerchant {
  merchantId: string;
  apiKey: string;
  clientId: string;
  token: string;
}

export async function issueToken(stack: Stack, apiKey: string, scope?: string): Promise<string> {
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

/** Each test makes its own merchant through the operator API, then a token with all of its key's scopes. */
export async function createMerchant(stack: Stack, overrides: Record<string, unknown> = {}): Promise<TestMerchant> {
  const response = await call(stack, 'POST', '/admin/v1/merchants', {
    headers: { authorization: `Bearer ${stack.operatorToken}` },
    body: { name: `Test merchant ${Math.random().toString(36).slice(2, 8)}`, ...overrides },
  });
  assert.equal(response.status, 201, response.text);
  const apiKey = response.body.api_key.secret as string;
  return {
    merchantId: response.body.merchant.id,
    apiKey,
    clientId: response.body.api_key.prefix,
    token: await issueToken(stack, apiKey),
  };
}
