import type { Migration } from '@merx/kit';

export const CONSOLE_SCHEMA = 'console';

/**
 * The console owns browser sessions and nothing else: the merchant's data stays with the services
 * that own it and is read through the public API. Session ids and sign-in ids are stored as
 * SHA-256 hashes and tokens sealed (AES-256-GCM), so a copy of this table signs nobody in.
 */
export const consoleMigrations: Migration[] = [
  {
    id: '001_sessions',
    sql: `
      CREATE TABLE {{schema}}.sessions (
        id_hash text PRIMARY KEY,
        merchant_id text NOT NULL,
        user_id text NOT NULL,
        scopes text[] NOT NULL,
        access_token_sealed text NOT NULL,
        access_expires_at timestamptz NOT NULL,
        refresh_token_sealed text NOT NULL,
        token_version integer NOT NULL DEFAULT 1,
        csrf_token text NOT NULL,
        created_at timestamptz NOT NULL,
        last_seen_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX sessions_by_expiry ON {{schema}}.sessions (expires_at);
      CREATE INDEX sessions_by_merchant ON {{schema}}.sessions (merchant_id, user_id);

      CREATE TABLE {{schema}}.sign_ins (
        id_hash text PRIMARY KEY,
        state text NOT NULL,
        code_verifier_sealed text NOT NULL,
        return_to text NOT NULL,
        created_at timestamptz NOT NULL
      );
    `,
  },
];
