export { startCatalog, type CatalogDeps, type RunningCatalog } from './service.js';
export { DEFAULT_CATALOG_QUEUE } from './events/consumer.js';
export { CATALOG_SCHEMA } from './store/migrations.js';
