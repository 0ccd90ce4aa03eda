import { idempotencyMigration, inboxMigration, outboxMigration, type Migration } from '@merx/kit';
import { oidcMigrationSql } from '../provider/adapter.js';

export const OAUTH_SCHEMA = 'oauth';

export const oauthMigrations: Migration[] = [
  outboxMigration,
  inboxMigration,
  idempotencyMigration,
  {
    id: '001_accounts',
    // The oauth service keeps the facts it needs to authenticate a merchant (mode, status) and
    // announces provisioning as events; merchant profiles belong to the merchants service.
    sql: `
      CREATE TABLE {{schema}}.merchants (
        id text PRIMARY KEY,
        name text NOT NULL,
        mode text NOT NULL CHECK (mode IN ('sandbox', 'live')),
        plan text NOT NULL CHECK (plan IN ('sandbox', 'standard', 'scale')),
        default_currency text NOT NULL,
        timezone text NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'suspended')),
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
      CREATE TABLE {{schema}}.api_keys (
        merchant_id text NOT NULL REFERENCES {{schema}}.merchants (id),
        id text NOT NULL,
        name text NOT NULL,
        client_id text NOT NULL UNIQUE,
        secret_hash text NOT NULL,
        scopes text[] NOT NULL,
        created_at timestamptz NOT NULL,
        last_used_at timestamptz,
        revoked_at timestamptz,
        PRIMARY KEY (merchant_id, id)
      );
    `,
  },
  {
    id: '002_signing_keys',
    sql: `
      CREATE TABLE {{schema}}.signing_keys (
        kid text PRIMARY KEY,
        private_jwk jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        retired_at timestamptz
      );
    `,
  },
  { id: '003_oidc_payloads', sql: oidcMigrationSql },
];
