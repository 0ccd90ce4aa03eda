import {
  idempotencyByCredentialMigration,
  idempotencyMigration,
  inboxMigration,
  outboxMigration,
  outboxTraceContextMigration,
  type Migration,
} from '@merx/kit';

export const AUDIT_SCHEMA = 'audit';

export const auditMigrations: Migration[] = [
  outboxMigration,
  outboxTraceContextMigration,
  inboxMigration,
  idempotencyMigration,
  idempotencyByCredentialMigration,
  {
    id: '001_entries',
    // Append-only is enforced by the database, not only by the API: a trigger refuses UPDATE,
    // DELETE and TRUNCATE for every role (retention purges alone may delete, by setting
    // merx.audit_retention in their own transaction), and PUBLIC holds no such privileges.
    sql: `
      CREATE TABLE {{schema}}.entries (
        merchant_id text NOT NULL,
        id text NOT NULL,
        sequence bigint NOT NULL,
        occurred_at timestamptz NOT NULL,
        actor jsonb NOT NULL,
        action text NOT NULL,
        resource_type text NOT NULL,
        resource_id text NOT NULL,
        changes jsonb NOT NULL,
        request_id text,
        ip text,
        event_id text NOT NULL,
        prev_hash text NOT NULL,
        hash text NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (merchant_id, id),
        CONSTRAINT entries_sequence_per_merchant UNIQUE (merchant_id, sequence),
        CONSTRAINT entries_event_per_merchant UNIQUE (merchant_id, event_id)
      );
      CREATE INDEX entries_by_resource ON {{schema}}.entries (merchant_id, resource_id, id);
      CREATE INDEX entries_by_action ON {{schema}}.entries (merchant_id, action, id);
      CREATE INDEX entries_by_time ON {{schema}}.entries (merchant_id, occurred_at);

      CREATE TABLE {{schema}}.chain_heads (
        merchant_id text PRIMARY KEY,
        sequence bigint NOT NULL,
        hash text NOT NULL
      );

      -- Where verification starts once retention has removed the oldest entries.
      CREATE TABLE {{schema}}.checkpoints (
        merchant_id text PRIMARY KEY,
        sequence bigint NOT NULL,
        hash text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE FUNCTION {{schema}}.refuse_entry_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND current_setting('merx.audit_retention', true) = 'on' THEN
          RETURN OLD;
        END IF;
        RAISE EXCEPTION 'audit entries are append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
      END;
      $$;
      CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON {{schema}}.entries
        FOR EACH ROW EXECUTE FUNCTION {{schema}}.refuse_entry_change();
      CREATE TRIGGER entries_no_truncate BEFORE TRUNCATE ON {{schema}}.entries
        FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.refuse_entry_change();
      REVOKE UPDATE, DELETE, TRUNCATE ON {{schema}}.entries FROM PUBLIC;
    `,
  },
  {
    id: '002_hash_versions_and_retention_function',
    // Entries name the frozen form their hash covers, so the API can grow without breaking a
    // chain. Retention no longer opens with a session setting anyone could set: only the purge
    // function, running as its own role (SECURITY DEFINER), may delete, and only old entries.
    // Creating that role needs a superuser or CREATEROLE for whoever runs the migration.
    sql: `
      ALTER TABLE {{schema}}.entries ADD COLUMN hash_version smallint NOT NULL DEFAULT 1;
      ALTER TABLE {{schema}}.entries ALTER COLUMN hash_version DROP DEFAULT;

      DO $$
      BEGIN
        CREATE ROLE merx_audit_retention NOLOGIN;
      EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL; -- another schema or database of this cluster made it first
      END;
      $$;
      GRANT USAGE ON SCHEMA {{schema}} TO merx_audit_retention;
      GRANT SELECT, DELETE ON {{schema}}.entries TO merx_audit_retention;
      GRANT SELECT, INSERT, UPDATE ON {{schema}}.checkpoints TO merx_audit_retention;

      CREATE OR REPLACE FUNCTION {{schema}}.refuse_entry_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND current_user = 'merx_audit_retention' THEN
          RETURN OLD;
        END IF;
        RAISE EXCEPTION 'audit entries are append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
      END;
      $$;

      -- Removes a merchant's entries up to and including a sequence, moving its checkpoint there
      -- so the rest still verifies. Refuses entries younger than a day: retention, not erasure.
      CREATE FUNCTION {{schema}}.purge_entries_through(p_merchant_id text, p_sequence bigint) RETURNS bigint
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
      DECLARE
        last_removed {{schema}}.entries%ROWTYPE;
        removed bigint;
      BEGIN
        SELECT * INTO last_removed FROM {{schema}}.entries WHERE merchant_id = p_merchant_id AND sequence = p_sequence;
        IF NOT FOUND THEN
          RETURN 0;
        END IF;
        IF last_removed.occurred_at > now() - interval '1 day' THEN
          RAISE EXCEPTION 'audit retention keeps entries younger than a day (sequence % of %)', p_sequence, p_merchant_id USING ERRCODE = 'insufficient_privilege';
        END IF;
        INSERT INTO {{schema}}.checkpoints (merchant_id, sequence, hash) VALUES (p_merchant_id, last_removed.sequence, last_removed.hash)
          ON CONFLICT (merchant_id) DO UPDATE SET sequence = EXCLUDED.sequence, hash = EXCLUDED.hash, created_at = now()
          WHERE {{schema}}.checkpoints.sequence < EXCLUDED.sequence;
        DELETE FROM {{schema}}.entries WHERE merchant_id = p_merchant_id AND sequence <= p_sequence;
        GET DIAGNOSTICS removed = ROW_COUNT;
        RETURN removed;
      END;
      $$;
      ALTER FUNCTION {{schema}}.purge_entries_through(text, bigint) OWNER TO merx_audit_retention;
      REVOKE EXECUTE ON FUNCTION {{schema}}.purge_entries_through(text, bigint) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION {{schema}}.purge_entries_through(text, bigint) TO CURRENT_USER;
    `,
  },
];
