export * from './provider/index.js';
export { startOauth, type OauthDeps, type RunningOauth } from './service.js';
export { DEFAULT_OAUTH_QUEUE } from './events/merchant-events.js';
export { provisionMerchant } from './usecases/provision-merchant.js';
export { OAUTH_SCHEMA } from './store/migrations.js';
export { revocationsFromStore } from './usecases/revocations.js';
