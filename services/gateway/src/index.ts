export { startGateway, type GatewayDeps, type RunningGateway } from './service.js';
export { DEFAULT_GRPC_CONNECTION_SETTINGS, grpcConnectionSettingsFromEnv, type GrpcConnectionSettings } from './grpc/connections.js';
export { throttleSettingsFromEnv, type ThrottleSettings } from './throttle/config.js';
export { DEFAULT_PLAN_LIMITS, SENSITIVE_OPERATIONS, type PlanLimits, type Plan, type ThrottleClass } from './throttle/policy.js';
export { purgeThrottleState } from './throttle/redis-store.js';
export { THROTTLE_OVERRIDES_QUEUE } from './throttle/limiter.js';
export { API_REFERENCE_CSP, API_REFERENCE_PATH, loadApiReference, type ApiReference } from './docs.js';
