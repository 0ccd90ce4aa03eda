import {
  idempotencyByCredentialMigration,
  idempotencyMigration,
  inboxMigration,
  outboxMigration,
  outboxTraceContextMigration,
  type Migration,
} from '@merx/kit';
import { oidcMigrationSql } from '../provider/adapter.js';

export const OAUTH_SCHEMA = 'oauth';

export const oauthMigrations: Migration[] = [
  outboxMigration,
  outboxTraceContextMigration,
  inboxMigration,
  idempotencyMigration,
  idempotencyByCredentialMigration,
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
  {
    id: '004_users_and_apps',
    sql: `
      CREATE TABLE {{schema}}.users (
        id text PRIMARY KEY,
        merchant_id text NOT NULL REFERENCES {{schema}}.merchants (id),
        email text NOT NULL,
        password_hash text NOT NULL,
        created_at timestamptz NOT NULL
      );
      -- One login per email across Merx: the login page has no merchant to pick from.
      CREATE UNIQUE INDEX users_email_idx ON {{schema}}.users (lower(email));
      CREATE TABLE {{schema}}.apps (
        id text PRIMARY KEY,
        name text NOT NULL,
        client_id text NOT NULL UNIQUE,
        secret_hash text NOT NULL,
        redirect_uris text[] NOT NULL,
        scopes text[] NOT NULL,
        created_at timestamptz NOT NULL
      );
      -- A merchant's grant to an app; the oidc-provider Grant it names holds the same scopes.
      CREATE TABLE {{schema}}.app_installations (
        merchant_id text NOT NULL REFERENCES {{schema}}.merchants (id),
        app_id text NOT NULL REFERENCES {{schema}}.apps (id),
        grant_id text NOT NULL UNIQUE,
        user_id text NOT NULL,
        scopes text[] NOT NULL,
        installed_at timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, app_id)
      );
    `,
  },
  {
    id: '005_signing_key_states',
    // next is published before it signs, so verifiers have cached it by the time it is promoted.
    sql: `
      ALTER TABLE {{schema}}.signing_keys ADD COLUMN state text NOT NULL DEFAULT 'current' CHECK (state IN ('current', 'next', 'retired'));
      UPDATE {{schema}}.signing_keys SET state = 'retired' WHERE retired_at IS NOT NULL;
      ALTER TABLE {{schema}}.signing_keys ADD COLUMN published_until timestamptz;
    `,
  },
  {
    id: '010_throttle_overrides',
    // The operator's per-merchant throttle numbers; the gateway receives them as merchants.throttle_updated.
    sql: `
      CREATE TABLE {{schema}}.throttle_overrides (
        merchant_id text PRIMARY KEY REFERENCES {{schema}}.merchants (id),
        overrides jsonb NOT NULL,
        version integer NOT NULL,
        updated_at timestamptz NOT NULL
      );
    `,
  },
  {
    id: '012_login_failures',
    // Failed sign-ins per account and per client address, shared by every replica (domain/login-throttle.ts).
    sql: `
      CREATE TABLE {{schema}}.login_failures (
        key text PRIMARY KEY,
        failures integer NOT NULL,
        last_failure_at timestamptz NOT NULL,
        locked_until timestamptz
      );
    `,
  },
  {
    id: '013_merchant_group_versions',
    // One owner per half of the merchant: oauth owns the standing (mode, plan, status) and numbers
    // its changes; the profile (name, currency, time zone) is the merchants service's, and oauth's
    // copy remembers the version it holds so a late or repeated change never replaces a newer one.
    // Existing rows: oauth's version so far counted its own changes (and took the greater of the
    // merchants service's), so it is where the standing's numbering goes on; the copy starts at 1.
    sql: `
      ALTER TABLE {{schema}}.merchants
        ADD COLUMN standing_version integer NOT NULL DEFAULT 1,
        ADD COLUMN standing_updated_at timestamptz,
        ADD COLUMN profile_version integer NOT NULL DEFAULT 1;
      UPDATE {{schema}}.merchants SET standing_version = version, standing_updated_at = updated_at;
      ALTER TABLE {{schema}}.merchants ALTER COLUMN standing_updated_at SET NOT NULL;
    `,
  },
];
