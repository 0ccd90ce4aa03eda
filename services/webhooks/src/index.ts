export * from './service.js';
export * from './settings.js';
// What a subscriber receives for an event, for tests that hold real events to the document's webhooks section.
export { webhookBody, generateWebhookSecret } from './delivery/signing.js';
export { WEBHOOKS_SCHEMA, webhooksMigrations } from './store/migrations.js';
export { SEALED_ENDPOINT_SECRETS } from './store/endpoints-store.js';
