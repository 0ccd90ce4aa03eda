import { idempotencyMigration, inboxMigration, outboxMigration, type Migration } from '@merx/kit';

export const AUDIT_SCHEMA = 'audit';

export const auditMigrations: Migration[] = [
  outboxMigration,
  inboxMigration,
  idempotencyMigration,
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
];
