export * from './errors.js';
export * from './scopes.js';
export * from './openapi.js';
export * from './events.js';
export * from './validator.js';
export * from './internal-events.js';
export * from './openapi/schemas-merchants.js';
