import {
  idempotencyByCredentialMigration,
  idempotencyMigration,
  inboxMigration,
  outboxMigration,
  outboxTraceContextMigration,
  type Migration,
} from '@merx/kit';

export const MERCHANTS_SCHEMA = 'merchants';

export const merchantsMigrations: Migration[] = [
  outboxMigration,
  outboxTraceContextMigration,
  inboxMigration,
  idempotencyMigration,
  idempotencyByCredentialMigration,
  {
    id: '001_merchant_configuration',
    // merchant_id leads every key, as in every service: isolation is checkable and each table
    // can be distributed by tenant.
    sql: `
      -- The merchant as this service knows it: its profile is owned here, its standing (mode,
      -- plan, status) is the oauth service's and arrives with merchants.created / .updated.
      CREATE TABLE {{schema}}.merchants (
        merchant_id text PRIMARY KEY,
        name text NOT NULL,
        mode text NOT NULL CHECK (mode IN ('sandbox', 'live')),
        plan text NOT NULL,
        default_currency text NOT NULL,
        timezone text NOT NULL,
        status text NOT NULL,
        version integer NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );

      CREATE TABLE {{schema}}.sources (
        merchant_id text NOT NULL,
        id text NOT NULL,
        name text NOT NULL,
        kind text NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'paused', 'disabled')),
        settings jsonb NOT NULL DEFAULT '{}'::jsonb,
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, id)
      );

      CREATE TABLE {{schema}}.destinations (
        merchant_id text NOT NULL,
        id text NOT NULL,
        name text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('webhook', 'http')),
        url text NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'paused', 'disabled')),
        disabled_reason text,
        -- Kept in plain text because signing needs it; it leaves this service only to the
        -- delivery engine (internal.destination_synced), never in a response after creation.
        secret text NOT NULL,
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, id)
      );

      CREATE TABLE {{schema}}.rules (
        merchant_id text NOT NULL,
        id text NOT NULL,
        name text NOT NULL,
        event_types text[] NOT NULL,
        condition text NOT NULL,
        action text NOT NULL CHECK (action IN ('forward', 'drop', 'transform')),
        transform jsonb,
        enabled boolean NOT NULL,
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, id)
      );

      CREATE TABLE {{schema}}.connections (
        merchant_id text NOT NULL,
        id text NOT NULL,
        name text,
        source_id text NOT NULL,
        destination_id text NOT NULL,
        rule_ids text[] NOT NULL,
        event_types text[] NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'paused')),
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, id),
        FOREIGN KEY (merchant_id, source_id) REFERENCES {{schema}}.sources (merchant_id, id),
        FOREIGN KEY (merchant_id, destination_id) REFERENCES {{schema}}.destinations (merchant_id, id)
      );
      CREATE INDEX connections_by_source ON {{schema}}.connections (merchant_id, source_id);
      CREATE INDEX connections_by_destination ON {{schema}}.connections (merchant_id, destination_id);
      -- "Which connections use this rule" when a rule is deleted.
      CREATE INDEX connections_by_rule ON {{schema}}.connections USING gin (rule_ids);

      CREATE TABLE {{schema}}.records (
        merchant_id text NOT NULL,
        id text NOT NULL,
        source_id text NOT NULL,
        type text NOT NULL,
        external_id text NOT NULL,
        occurred_at timestamptz NOT NULL,
        data jsonb NOT NULL,
        event_id text NOT NULL,
        received_at timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, id),
        -- A record is accepted once per (source, type, external_id): the database decides, so
        -- concurrent repeats of one batch cannot both win.
        CONSTRAINT records_once UNIQUE (merchant_id, source_id, type, external_id)
      );
      CREATE INDEX records_by_source ON {{schema}}.records (merchant_id, source_id, id);

      -- What each connection did with each record (routed, dropped, filtered).
      CREATE TABLE {{schema}}.routings (
        merchant_id text NOT NULL,
        record_id text NOT NULL,
        connection_id text NOT NULL,
        destination_id text NOT NULL,
        outcome text NOT NULL CHECK (outcome IN ('routed', 'dropped', 'filtered')),
        rule_id text,
        reason text,
        routed_id text,
        routed_at timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, record_id, connection_id)
      );

      CREATE TABLE {{schema}}.sandbox_resets (
        merchant_id text NOT NULL,
        id text NOT NULL,
        seed boolean NOT NULL,
        status text NOT NULL CHECK (status IN ('running', 'completed')),
        -- One entry per service: {"service", "status", "removed", "seeded", "completed_at"}.
        services jsonb NOT NULL,
        requested_at timestamptz NOT NULL,
        completed_at timestamptz,
        PRIMARY KEY (merchant_id, id)
      );
    `,
  },
  {
    id: '002_merchant_group_versions',
    // One owner per half of the merchant: the profile (name, currency, time zone) is this
    // service's and numbers its own changes; the standing (mode, plan, status) is the oauth
    // service's, and this copy remembers the version it holds so a late or repeated
    // merchants.standing_changed never replaces a newer one. A standing can arrive before the
    // merchant's merchants.created: the row then holds the standing alone (profile_version 0, no
    // profile) until the profile comes. Existing rows: this service's version so far counted its
    // own changes (and took the greater of oauth's), so it is where the profile's numbering goes
    // on; the standing copy starts at 1.
    sql: `
      ALTER TABLE {{schema}}.merchants
        ADD COLUMN profile_version integer,
        ADD COLUMN standing_version integer NOT NULL DEFAULT 1,
        ALTER COLUMN name DROP NOT NULL,
        ALTER COLUMN default_currency DROP NOT NULL,
        ALTER COLUMN timezone DROP NOT NULL;
      UPDATE {{schema}}.merchants SET profile_version = version;
      ALTER TABLE {{schema}}.merchants
        ALTER COLUMN profile_version SET NOT NULL,
        ADD CONSTRAINT merchants_profile_known CHECK (profile_version = 0 OR (name IS NOT NULL AND default_currency IS NOT NULL AND timezone IS NOT NULL));
    `,
  },
  {
    id: '003_routing_backlog',
    // Record events a merchant sent beyond what it may have waiting for the rule workers: taken
    // off the bus (so they hold none of its prefetch, which every merchant shares) and routed
    // from here in their turn, oldest first (seq). A replica claims a few at a time by lease,
    // renewed while it routes them, so a dead replica's claims pass to the others. A row goes in
    // the transaction that records its routings.
    sql: `
      CREATE TABLE {{schema}}.routing_backlog (
        merchant_id text NOT NULL,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        event_id text NOT NULL,
        -- The event's JSON as it came off the bus, but for the record's data, which is read back
        -- from the record (record_id) when the event is routed: parking costs a few hundred bytes
        -- an event, however large the records of a flood.
        record_id text NOT NULL,
        event text NOT NULL,
        parked_at timestamptz NOT NULL DEFAULT now(),
        -- Failed routings so far: each one puts the row back later (claimed_until) than the last.
        attempts integer NOT NULL DEFAULT 0,
        claimed_by text,
        claimed_until timestamptz,
        PRIMARY KEY (merchant_id, seq),
        CONSTRAINT routing_backlog_once UNIQUE (merchant_id, event_id)
      );
    `,
  },
];
