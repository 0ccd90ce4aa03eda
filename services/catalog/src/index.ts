export { startCatalog, type CatalogDeps, type RunningCatalog } from './service.js';
export { CATALOG_SCHEMA } from './store/migrations.js';
