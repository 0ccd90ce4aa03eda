export * from './service.js';
export * from './settings.js';
export { MERCHANTS_QUEUE } from './events/consumer.js';
export { MERCHANTS_SCHEMA, merchantsMigrations } from './store/migrations.js';
export { SEALED_DESTINATION_SECRETS } from './store/tables.js';
export { httpMerchantLookup, type MerchantLookup } from './upstream/oauth-merchants.js';
