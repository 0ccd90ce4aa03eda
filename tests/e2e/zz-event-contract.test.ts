import assert from 'node:assert/strict';
import { createContractValidator, eventCatalogue, openApiDocument } from '@merx/contracts';
import { generateWebhookSecret, webhookBody } from '@merx/webhooks';
import { invalidEventsSoFar, sharedStack } from '../src/harness/index.js';

// Named to run last: by now every other file has caused its events.
describe('event contract', () => {
  it('every event published during the run matches its schema in the event catalogue', async function () {
    this.timeout(60_000);
    const stack = await sharedStack();
    assert.ok(stack.events.seen.length > 0, 'the run published events');
    assert.deepEqual(await invalidEventsSoFar(), []);
  });

  it('every public event of the run, as the delivery engine signs it for a subscriber, matches its entry in the webhooks section', async function () {
    this.timeout(60_000);
    const stack = await sharedStack();
    const validator = createContractValidator();
    const secret = generateWebhookSecret();
    const published = stack.events.seen.filter((event) => !event.topic.startsWith('internal.'));
    assert.ok(published.length > 0, 'the run published public events');
    const problems = published.flatMap((event) => validator.validateWebhook({ body: webhookBody(event as Parameters<typeof webhookBody>[0], secret) }));
    assert.deepEqual(problems, []);
    for (const event of eventCatalogue) assert.ok(openApiDocument.webhooks[event.name]?.post, `${event.name} has a webhooks entry`);
    const covered = new Set(published.map((event) => event.topic));
    assert.ok(covered.size >= 20, `the run covered ${covered.size} of ${eventCatalogue.length} events: ${[...covered].join(', ')}`);
  });
});
