export * from './provider/index.js';
export { startOauth, type OauthDeps, type RunningOauth } from './service.js';
export { OAUTH_QUEUE } from './events/merchant-events.js';
export { provisionMerchant } from './usecases/provision-merchant.js';
export { OAUTH_SCHEMA, oauthMigrations } from './store/migrations.js';
export { revocationsFromStore } from './usecases/revocations.js';
export { signInThrottleFromEnv, type SignInThrottle } from './domain/login-throttle.js';
