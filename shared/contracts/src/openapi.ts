import { headers, methodNotAllowedResponse, parameters, ref, responses, securitySchemes } from './openapi/components.js';
import { adminPaths, metaPaths, oauthPaths, opsPaths } from './openapi/paths-platform.js';
import { apiKeyPaths } from './openapi/paths-api-keys.js';
import { productPaths } from './openapi/paths-products.js';
import { appAdminPaths, appCreateSchema, appWithSecretSchema, installedAppPaths, installedAppSchema, signingKeyRotationSchema } from './openapi/paths-apps.js';
import { merchantIdParameter, throttleAdminPaths, throttleOverrideSchema, throttleOverridesSchema } from './openapi/paths-throttle.js';
import { busAdminPaths, busPoisonReplayRequestSchema, busPoisonReplaySchema, busPoisonSchema, poisonedMessageSchema } from './openapi/paths-bus.js';
import { auditEntrySchema, auditPaths, auditVerificationSchema } from './openapi/paths-audit.js';
import { webhookPaths } from './openapi/paths-webhooks.js';
import { merchantsParameters, merchantsServicePaths } from './openapi/paths-merchants.js';
import {
  connectionCreateSchema,
  connectionSchema,
  connectionUpdateSchema,
  destinationCreateSchema,
  destinationSchema,
  destinationUpdateSchema,
  destinationWithSecretSchema,
  ingestedRecordSchema,
  merchantUpdateSchema,
  recordBatchResultSchema,
  recordResultSchema,
  recordRouteSchema,
  recordSchema,
  ruleCreateSchema,
  ruleSchema,
  ruleTransformSchema,
  ruleUpdateSchema,
  sandboxResetRequestSchema,
  sandboxResetSchema,
  sourceCreateSchema,
  sourceSchema,
  sourceUpdateSchema,
} from './openapi/schemas-merchants.js';
import {
  deadLetterReplayRequestSchema,
  deadLetterReplaySchema,
  eventDataByTopicSchema,
  eventSchema,
  systemAlertSchema,
  webhookAttemptSchema,
  webhookDeadLetterSchema,
  webhookDeliverySchema,
  webhookDeliveryWithAttemptsSchema,
  webhookSubscriptionCreateSchema,
  webhookSubscriptionSchema,
  webhookSubscriptionStatsSchema,
  webhookSubscriptionUpdateSchema,
  webhookSubscriptionWithSecretSchema,
} from './openapi/schemas-webhooks.js';
import { appGrantSchema, authAttemptSchema, eventCatalogue, tokenIssuanceSchema } from './events.js';
import { recordBatchRequestSchema, recordInputSchema, recordInputSchemas } from './openapi/schemas-record-inputs.js';
import { requestExamples } from './openapi/examples.js';
import { webhookHeaderParameters, webhooksOf } from './openapi/webhooks.js';
import {
  healthSchema,
  jsonWebKeySetSchema,
  oauthErrorSchema,
  openApiDocumentSchema,
  readinessSchema,
  tokenRequestSchema,
  tokenResponseSchema,
} from './openapi/schemas-platform.js';
import {
  apiKeyCreateSchema,
  apiKeySchema,
  apiKeyWithSecretSchema,
  fieldErrorSchema,
  listSchema,
  merchantCreateSchema,
  merchantProvisioningSchema,
  merchantSchema,
  merchantStandingSchema,
  problemSchema,
  productCreateSchema,
  productSchema,
  productUpdateSchema,
} from './openapi/schemas.js';
import type { ExampleObject, JsonSchema, OpenApiDocument, PathItem } from './openapi/types.js';

export type * from './openapi/types.js';

/** Every schema but the webhook payloads, which are built from the event catalogue over these. */
const resourceSchemas: Record<string, JsonSchema> = {
  Product: productSchema,
  ProductCreate: productCreateSchema,
  ProductUpdate: productUpdateSchema,
  ProductList: listSchema('#/components/schemas/Product'),
  Merchant: merchantSchema,
  MerchantStanding: merchantStandingSchema,
  MerchantCreate: merchantCreateSchema,
  MerchantProvisioning: merchantProvisioningSchema,
  MerchantUpdate: merchantUpdateSchema,
  Source: sourceSchema,
  SourceCreate: sourceCreateSchema,
  SourceUpdate: sourceUpdateSchema,
  SourceList: listSchema('#/components/schemas/Source'),
  Destination: destinationSchema,
  DestinationWithSecret: destinationWithSecretSchema,
  DestinationCreate: destinationCreateSchema,
  DestinationUpdate: destinationUpdateSchema,
  DestinationList: listSchema('#/components/schemas/Destination'),
  Rule: ruleSchema,
  RuleCreate: ruleCreateSchema,
  RuleUpdate: ruleUpdateSchema,
  RuleTransform: ruleTransformSchema,
  RuleList: listSchema('#/components/schemas/Rule'),
  Connection: connectionSchema,
  ConnectionCreate: connectionCreateSchema,
  ConnectionUpdate: connectionUpdateSchema,
  ConnectionList: listSchema('#/components/schemas/Connection'),
  Record: recordSchema,
  RecordRoute: recordRouteSchema,
  RecordList: listSchema('#/components/schemas/Record'),
  IngestedRecord: ingestedRecordSchema,
  RecordInput: recordInputSchema,
  ...recordInputSchemas,
  RecordBatchRequest: recordBatchRequestSchema,
  RecordBatchResult: recordBatchResultSchema,
  RecordResult: recordResultSchema,
  SandboxReset: sandboxResetSchema,
  SandboxResetRequest: sandboxResetRequestSchema,
  ThrottleOverride: throttleOverrideSchema,
  ThrottleOverrides: throttleOverridesSchema,
  ApiKey: apiKeySchema,
  ApiKeyWithSecret: apiKeyWithSecretSchema,
  ApiKeyCreate: apiKeyCreateSchema,
  ApiKeyList: listSchema('#/components/schemas/ApiKey'),
  AppCreate: appCreateSchema,
  AppWithSecret: appWithSecretSchema,
  InstalledApp: installedAppSchema,
  InstalledAppList: listSchema('#/components/schemas/InstalledApp'),
  SigningKeyRotation: signingKeyRotationSchema,
  Problem: problemSchema,
  FieldError: fieldErrorSchema,
  OAuthError: oauthErrorSchema,
  TokenRequest: tokenRequestSchema,
  TokenResponse: tokenResponseSchema,
  JsonWebKeySet: jsonWebKeySetSchema,
  Health: healthSchema,
  Readiness: readinessSchema,
  OpenApiDocument: openApiDocumentSchema,
  PoisonedMessage: poisonedMessageSchema,
  BusPoison: busPoisonSchema,
  BusPoisonReplayRequest: busPoisonReplayRequestSchema,
  BusPoisonReplay: busPoisonReplaySchema,
  AuditEntry: auditEntrySchema,
  AuditEntryList: listSchema('#/components/schemas/AuditEntry'),
  AuditVerification: auditVerificationSchema,
  WebhookSubscription: webhookSubscriptionSchema,
  WebhookSubscriptionWithSecret: webhookSubscriptionWithSecretSchema,
  WebhookSubscriptionCreate: webhookSubscriptionCreateSchema,
  WebhookSubscriptionUpdate: webhookSubscriptionUpdateSchema,
  WebhookSubscriptionList: listSchema('#/components/schemas/WebhookSubscription'),
  WebhookSubscriptionStats: webhookSubscriptionStatsSchema,
  WebhookDelivery: webhookDeliverySchema,
  WebhookDeliveryWithAttempts: webhookDeliveryWithAttemptsSchema,
  WebhookDeliveryList: listSchema('#/components/schemas/WebhookDelivery'),
  WebhookAttempt: webhookAttemptSchema,
  WebhookDeadLetter: webhookDeadLetterSchema,
  WebhookDeadLetterList: listSchema('#/components/schemas/WebhookDeadLetter'),
  DeadLetterReplayRequest: deadLetterReplayRequestSchema,
  DeadLetterReplay: deadLetterReplaySchema,
  Event: eventSchema,
  EventList: listSchema('#/components/schemas/Event'),
  EventDataByTopic: eventDataByTopicSchema(eventCatalogue),
  SystemAlert: systemAlertSchema,
  AppGrant: appGrantSchema,
  TokenIssuance: tokenIssuanceSchema,
  AuthAttempt: authAttemptSchema,
};

const componentNames = new Map(Object.entries(resourceSchemas).map(([name, schema]) => [schema, name]));
const eventPayloads = webhooksOf(eventCatalogue, (schema) => componentNames.get(schema));

/** Puts each operation's examples (examples.ts) beside its request body's schema; an example for no such operation is a mistake. */
function withRequestExamples(paths: Record<string, PathItem>, examples: Record<string, Record<string, ExampleObject>>): Record<string, PathItem> {
  const unused = new Set(Object.keys(examples));
  const woven = Object.fromEntries(
    Object.entries(paths).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item).map(([key, value]) => {
          const operation = value as PathItem['post'];
          const named = operation && 'operationId' in operation ? examples[operation.operationId] : undefined;
          if (!operation?.requestBody || !named) return [key, value];
          unused.delete(operation.operationId);
          const content = Object.fromEntries(Object.entries(operation.requestBody.content).map(([type, media]) => [type, { ...media, examples: named }]));
          return [key, { ...operation, requestBody: { ...operation.requestBody, content } }];
        }),
      ),
    ]),
  );
  if (unused.size > 0) throw new Error(`request examples for operations without a request body: ${[...unused].join(', ')}`);
  return woven;
}

/**
 * The public contract of the REST API, served at /api/v1/openapi.json. The SDKs and the CLI
 * are generated from it and the test suites check every response they see against it
 * (validator.ts), so a change here is a change of the API.
 */
export const openApiDocument: OpenApiDocument = {
  openapi: '3.1.0',
  jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
  info: {
    title: 'Merx API',
    version: '1.0.0',
    description:
      'Multi-tenant commerce API. JSON only; errors are RFC 9457 problem+json; money is a decimal string; times are ISO 8601 UTC with milliseconds. Every response carries X-Request-Id.',
    // The description, not the platform, is MIT: anyone may generate clients and docs from it (as Stripe publishes its own).
    license: { name: 'MIT', identifier: 'MIT' },
    contact: { name: 'Merx API support', url: 'https://merx.dev/support', email: 'api@merx.dev' },
  },
  servers: [
    { url: '/', description: 'The gateway origin that served this document.' },
    { url: 'http://localhost:8080', description: 'The embedded development mode (`npm start`).' },
  ],
  tags: [
    {
      name: 'merchant',
      description:
        "The merchant the access token belongs to: its name, default currency and time zone, which it may change (`merchants.updated`). `mode`, `plan` and `status` are the operator's; a PATCH naming them is a 422 `read_only`.",
    },
    { name: 'products', description: "The merchant's catalogue." },
    {
      name: 'sources',
      description:
        "Where commerce data comes from: a storefront, a marketplace, a POS, a review or ads platform, or anything custom. An `active` source ingests batches of up to 500 records (`POST /api/v1/sources/{id}/records`); each record is accepted once per source, type and external id, emits its event (`orders.created`, `reviews.submitted`, `campaign_spend.updated`, or `system_alerts.raised` for an `alert`) and is routed by the source's connections. A `paused` or `disabled` source refuses records (409).",
    },
    {
      name: 'destinations',
      description:
        "Where routed records go. Destinations are signed and delivered by the same engine as webhook subscriptions: Standard Webhooks headers (`webhook-id` = the record's event id), the same retries for 72 h, dead letters and replays, and a 410 Gone or an endpoint failing for too long disables the destination (`disabled_reason`, `system_alerts.raised`). A `webhook` destination receives the Merx event envelope with `hmac_sha256`, as a subscriber does; an `http` destination receives the routed record alone as the JSON body. Deliveries to a `paused` or `disabled` destination wait and go out when it is `active` again. Its deliveries and dead letters are listed under `/api/v1/webhooks/deliveries?destination_id=dst_...` and `/api/v1/webhooks/dead-letters?destination_id=dst_...`. The signing secret is shown once, when the destination is created.",
    },
    {
      name: 'rules',
      description:
        "A condition and an action on records. The condition is a CEL expression of type bool over `type`, `external_id`, `occurred_at` (a timestamp), `source_id` and `data` (the record's own data), checked when saved (422 `invalid_expression` on `condition`) and evaluated within time and size bounds. Actions: `forward` routes the record now; `drop` stops it (outcome `dropped`); `transform` rewrites its `data` (keep, then remove, then rename, then set) and goes on to the next rule. A connection applies its rules in order, skipping disabled rules, rules whose `event_types` exclude the record's event, and rules whose condition is false or fails at run time (a missing key, say). At the end of the list the record is routed, unless the connection has an enabled `forward` rule for that event type, in which case no forward rule matched and it is `filtered`.",
    },
    {
      name: 'connections',
      description:
        "A source routed to a destination through an ordered list of at most 20 rules, for some or all record event types. Only `active` connections route; what each connection did with a record (`routed`, `dropped`, `filtered`) is in the record's `routes`. A connection names only the merchant's own source, destination and rules (422 otherwise), and a source, destination or rule a connection uses cannot be deleted (409).",
    },
    {
      name: 'webhooks',
      description:
        'Subscriptions that POST the merchant\'s events to a URL, signed two ways: Standard Webhooks headers (`webhook-id` = the event id, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, two entries while a rotated secret overlaps), so any Standard Webhooks library verifies them; and `hmac_sha256` in the body, the hex HMAC-SHA256 of the RFC 8785 canonical JSON of the other fields, with the same key. A 2xx within 15 s is success; failures are retried with exponential backoff for 72 h, then the delivery is a dead letter until replayed. Deliveries, their attempts and dead letters are listed here.',
    },
    { name: 'events', description: 'Every state change of the merchant, kept for 30 days, in the shape webhooks deliver it (without `hmac_sha256`).' },
    { name: 'audit', description: "The merchant's append-only, hash-chained audit log." },
    { name: 'api_keys', description: "The merchant's API keys: create with a subset of scopes, list, revoke." },
    { name: 'apps', description: 'Third-party apps: registered by operators, installed by merchants on the consent page.' },
    {
      name: 'sandbox',
      description:
        "Resets a sandbox merchant: every service erases the merchant's data (products; sources, destinations, rules, connections and records; webhook subscriptions, deliveries and events) and, on request, seeds a small fixture set. API keys and the audit log stay. The reset runs in the background: `sandbox.reset` when it starts, `sandbox.reset_completed` when every service has reported. Live merchants cannot reset (409).",
    },
    { name: 'oauth', description: 'Access tokens for API keys and the keys that sign them.' },
    { name: 'merchants', description: 'Tenants; provisioned by operators.' },
    { name: 'meta', description: 'This document.' },
    { name: 'ops', description: 'Health, readiness and metrics of every service and the gateway.' },
  ],
  paths: withRequestExamples(
    {
      ...productPaths,
      ...merchantsServicePaths,
      ...apiKeyPaths,
      ...auditPaths,
      ...webhookPaths,
      ...metaPaths,
      ...oauthPaths,
      ...adminPaths,
      ...appAdminPaths,
      ...installedAppPaths,
      ...throttleAdminPaths,
      ...busAdminPaths,
      ...opsPaths,
    },
    requestExamples,
  ),
  webhooks: eventPayloads.webhooks,
  components: {
    schemas: { ...resourceSchemas, ...eventPayloads.schemas },
    responses,
    parameters: { ...parameters, MerchantId: merchantIdParameter, ...merchantsParameters, ...webhookHeaderParameters },
    headers,
    securitySchemes,
  },
  'x-merx-unrouted-responses': { '404': ref('responses', 'NotFound'), '405': methodNotAllowedResponse },
};
