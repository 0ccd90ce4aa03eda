export * from './service.js';
export * from './settings.js';
