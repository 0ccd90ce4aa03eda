export { startCatalog, type CatalogDeps, type RunningCatalog } from './service.js';
export { CATALOG_QUEUE } from './events/consumer.js';
export { CATALOG_SCHEMA, catalogMigrations } from './store/migrations.js';
