export * from './api-keys.js';
export * from './adapter.js';
export * from './create-provider.js';
export * from './mount.js';
export * from './app-clients.js';
