export * from './client.js';
export * from './distributed.js';
export * from './events.js';
export * from './stack.js';
export * from './shared.js';
export * from './tcp-proxy.js';
export * from './browser.js';
export * from './wait.js';
