export * from './api-keys.js';
export * from './adapter.js';
export * from './create-provider.js';
