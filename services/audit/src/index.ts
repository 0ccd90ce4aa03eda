export { AUDIT_QUEUE, startAudit, type AuditDeps, type RunningAudit } from './service.js';
export { AUDIT_SCHEMA, auditMigrations } from './store/migrations.js';
export { GENESIS_HASH, hashEntry } from './domain/entry.js';
