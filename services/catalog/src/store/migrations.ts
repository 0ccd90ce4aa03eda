import {
  idempotencyByCredentialMigration,
  idempotencyMigration,
  inboxMigration,
  outboxMigration,
  outboxTraceContextMigration,
  type Migration,
} from '@merx/kit';

export const CATALOG_SCHEMA = 'catalog';

export const catalogMigrations: Migration[] = [
  outboxMigration,
  outboxTraceContextMigration,
  inboxMigration,
  idempotencyMigration,
  idempotencyByCredentialMigration,
  {
    id: '001_products',
    // merchant_id leads every key: isolation is checkable and the table can be distributed by tenant (Citus).
    sql: `
      CREATE TABLE {{schema}}.products (
        merchant_id text NOT NULL,
        id text NOT NULL,
        sku text NOT NULL,
        title text NOT NULL,
        description text,
        price numeric(30, 4) NOT NULL CHECK (price >= 0),
        currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
        status text NOT NULL CHECK (status IN ('draft', 'active', 'archived')),
        inventory_quantity integer CHECK (inventory_quantity >= 0),
        attributes jsonb NOT NULL DEFAULT '{}'::jsonb,
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, id),
        CONSTRAINT products_sku_per_merchant UNIQUE (merchant_id, sku)
      );
      CREATE INDEX products_by_status ON {{schema}}.products (merchant_id, status, id);
    `,
  },
];
