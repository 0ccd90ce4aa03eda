import assert from 'node:assert/strict';
import { createContractValidator, isInternalEvent } from '@merx/contracts';
import { apiKeyOfMerchant, call, issueToken, poisonedOnPurpose, sharedStack, stateChangingCalls, type ApiResponse, type Stack } from '../src/harness/index.js';

/**
 * Operations that change no merchant's state, so no merchant's audit log can hold them. Every
 * other state-changing operation of the document must be exercised by the suite and audited.
 */
const NOT_MERCHANT_STATE: Record<string, string> = {
  'POST /oauth/token': 'token issuance is audited as auth.token_issued by the OAuth work, not as a resource change',
  'POST /admin/v1/signing-keys/rotate': "an operator act on the platform's keys; no merchant owns it",
  'POST /admin/v1/apps': 'an operator registering a third-party app on the platform; no merchant owns it until one installs it',
  'POST /admin/v1/bus/poison/replay':
    'an operator putting bus messages back on their queue: plumbing, no merchant state (the replayed events are audited as themselves)',
};

function templateOf(path: string, templates: string[]): string | undefined {
  const bare = path.split('?')[0]!.replace(/\/+$/, '');
  return templates.find((template) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(bare));
}

// Named to run after every other file: it checks what they did.
describe('audit completeness', () => {
  let stack: Stack;
  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });

  it('every state-changing operation of the OpenAPI document was exercised and left an audit entry with its request id', async function () {
    this.timeout(120_000);
    const operations = createContractValidator()
      .operations()
      .filter(
        (operation) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(operation.method) && !NOT_MERCHANT_STATE[`${operation.method} ${operation.pathTemplate}`],
      );
    const templates = operations.map((operation) => operation.pathTemplate);
    const exercised = new Set(stateChangingCalls.map((made) => `${made.method} ${templateOf(made.path, templates)}`));
    const missing = operations
      .filter((operation) => !exercised.has(`${operation.method} ${operation.pathTemplate}`))
      .map((operation) => `${operation.method} ${operation.pathTemplate} (${operation.operationId})`);
    assert.deepEqual(missing, [], 'state-changing operations no end-to-end test performs successfully, so their audit entries are unproven');

    // Each operation must have at least one call found in its merchant's log by request id. Not
    // every call: a repeated revoke of a revoked key succeeds and rightly changes (and logs) nothing.
    // Every real change is covered by the next test, which finds every published event in the log.
    const byMerchant = new Map<string, typeof stateChangingCalls>();
    for (const made of stateChangingCalls) {
      if (!made.merchantId) continue;
      byMerchant.set(made.merchantId, [...(byMerchant.get(made.merchantId) ?? []), made]);
    }
    const auditedOperations = new Set<string>();
    for (const [merchantId, calls] of byMerchant) {
      const token = await tokenForMerchant(stack, merchantId);
      if (!token) continue;
      // Once every event of this merchant is in its log, the log has caught up: read it once.
      const eventIds = stack.events
        .forMerchant(merchantId)
        .filter((event) => !isInternalEvent(event.topic) && !poisonedOnPurpose.has(event.id))
        .map((event) => event.id);
      const requestIds = await auditedRequestIds(stack, token, eventIds);
      for (const made of calls) if (requestIds.has(made.requestId)) auditedOperations.add(`${made.method} ${templateOf(made.path, templates)}`);
    }
    const unaudited = operations.map((operation) => `${operation.method} ${operation.pathTemplate}`).filter((operation) => !auditedOperations.has(operation));
    assert.deepEqual(unaudited, [], 'operations none of whose successful calls left an audit entry');
  });

  it("every event published during the run is in its merchant's audit log", async function () {
    this.timeout(120_000);
    const byMerchant = new Map<string, Set<string>>();
    // Messages between services (internal.*) are plumbing, not merchant events: the public event of
    // the same change is what the log holds.
    // Events poisoned on purpose (tests/e2e/bus-reliability.test.ts) are set aside by design.
    for (const event of stack.events.seen.filter((seen) => !isInternalEvent(seen.topic) && !poisonedOnPurpose.has(seen.id))) {
      byMerchant.set(event.merchant_id, (byMerchant.get(event.merchant_id) ?? new Set()).add(event.id));
    }
    const missing: string[] = [];
    for (const [merchantId, eventIds] of byMerchant) {
      const token = await tokenForMerchant(stack, merchantId);
      if (!token) continue; // a merchant provisioned outside the suite's own helpers (none today)
      const recorded = await auditedEventIds(stack, token, [...eventIds]);
      for (const id of eventIds) if (!recorded.has(id)) missing.push(`${id} of ${merchantId}`);
    }
    assert.deepEqual(missing, []);
  });
});

const keys = new Map<string, string>();

/** The audit log is read with the merchant's own key; the harness registers every key it provisions. */
async function tokenForMerchant(stack: Stack, merchantId: string): Promise<string | undefined> {
  const apiKey = keys.get(merchantId) ?? apiKeyOfMerchant(merchantId);
  if (!apiKey) return undefined;
  keys.set(merchantId, apiKey);
  try {
    return await issueToken(stack, apiKey, 'audit:read');
  } catch {
    return undefined; // the key was revoked by the test that made it, or the merchant suspended
  }
}

async function allEntries(stack: Stack, token: string): Promise<Array<{ request_id: string | null; event_id: string }>> {
  const entries: Array<{ request_id: string | null; event_id: string }> = [];
  let cursor: string | null = null;
  do {
    const page: ApiResponse = await call(stack, 'GET', `/api/v1/audit?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { token });
    entries.push(...page.body.data);
    cursor = page.body.next_cursor;
  } while (cursor);
  return entries;
}

async function waitForAudit(
  stack: Stack,
  token: string,
  wanted: string[],
  key: (entry: { request_id: string | null; event_id: string }) => string | null,
): Promise<Set<string>> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const found = new Set((await allEntries(stack, token)).map(key).filter((value): value is string => value !== null));
    if (wanted.every((id) => found.has(id)) || Date.now() > deadline) return found;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits until the given events are logged, then answers the request ids of everything logged. */
async function auditedRequestIds(stack: Stack, token: string, eventIds: string[]): Promise<Set<string>> {
  await waitForAudit(stack, token, eventIds, (entry) => entry.event_id);
  return new Set((await allEntries(stack, token)).map((entry) => entry.request_id).filter((id): id is string => id !== null));
}
const auditedEventIds = (stack: Stack, token: string, wanted: string[]) => waitForAudit(stack, token, wanted, (entry) => entry.event_id);
