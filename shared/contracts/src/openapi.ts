import { headers, parameters, ref, responses, securitySchemes } from './openapi/components.js';
import { adminPaths, metaPaths, oauthPaths, opsPaths } from './openapi/paths-platform.js';
import { apiKeyPaths } from './openapi/paths-api-keys.js';
import { productPaths } from './openapi/paths-products.js';
import { appAdminPaths, appCreateSchema, appWithSecretSchema, installedAppPaths, installedAppSchema, signingKeyRotationSchema } from './openapi/paths-apps.js';
import { merchantIdParameter, throttleAdminPaths, throttleOverrideSchema, throttleOverridesSchema } from './openapi/paths-throttle.js';
import { auditEntrySchema, auditPaths, auditVerificationSchema } from './openapi/paths-audit.js';
import { webhookPaths } from './openapi/paths-webhooks.js';
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
  webhookRequestBodySchema,
  webhookSubscriptionCreateSchema,
  webhookSubscriptionSchema,
  webhookSubscriptionStatsSchema,
  webhookSubscriptionUpdateSchema,
  webhookSubscriptionWithSecretSchema,
} from './openapi/schemas-webhooks.js';
import { eventCatalogue } from './events.js';
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
  problemSchema,
  productCreateSchema,
  productSchema,
  productUpdateSchema,
} from './openapi/schemas.js';
import type { OpenApiDocument } from './openapi/types.js';

export type * from './openapi/types.js';

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
  },
  servers: [
    { url: '/', description: 'The gateway origin that served this document.' },
    { url: 'http://localhost:8080', description: 'The embedded development mode (`npm start`).' },
  ],
  tags: [
    { name: 'products', description: 'The merchant\'s catalogue.' },
    {
      name: 'webhooks',
      description:
        'Subscriptions that POST the merchant\'s events to a URL, signed two ways: Standard Webhooks headers (`webhook-id` = the event id, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, two entries while a rotated secret overlaps), so any Standard Webhooks library verifies them; and `hmac_sha256` in the body, the hex HMAC-SHA256 of the RFC 8785 canonical JSON of the other fields, with the same key. A 2xx within 15 s is success; failures are retried with exponential backoff for 72 h, then the delivery is a dead letter until replayed. Deliveries, their attempts and dead letters are listed here.',
    },
    { name: 'events', description: 'Every state change of the merchant, kept for 30 days, in the shape webhooks deliver it (without `hmac_sha256`).' },
    { name: 'audit', description: 'The merchant\'s append-only, hash-chained audit log.' },
    { name: 'api_keys', description: 'The merchant\'s API keys: create with a subset of scopes, list, revoke.' },
    { name: 'apps', description: 'Third-party apps: registered by operators, installed by merchants on the consent page.' },
    { name: 'oauth', description: 'Access tokens for API keys and the keys that sign them.' },
    { name: 'merchants', description: 'Tenants; provisioned by operators.' },
    { name: 'meta', description: 'This document.' },
    { name: 'ops', description: 'Health, readiness and metrics of every service and the gateway.' },
  ],
  paths: { ...productPaths, ...apiKeyPaths, ...auditPaths, ...webhookPaths, ...metaPaths, ...oauthPaths, ...adminPaths, ...appAdminPaths, ...installedAppPaths, ...throttleAdminPaths, ...opsPaths },
  components: {
    schemas: {
      Product: productSchema,
      ProductCreate: productCreateSchema,
      ProductUpdate: productUpdateSchema,
      ProductList: listSchema('#/components/schemas/Product'),
      Merchant: merchantSchema,
      MerchantCreate: merchantCreateSchema,
      MerchantProvisioning: merchantProvisioningSchema,
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
      WebhookRequestBody: webhookRequestBodySchema,
      SystemAlert: systemAlertSchema,
    },
    responses,
    parameters: { ...parameters, MerchantId: merchantIdParameter },
    headers,
    securitySchemes,
  },
  'x-merx-unrouted-responses': { '404': ref('responses', 'NotFound'), '405': ref('responses', 'MethodNotAllowed') },
};
