import {
  idempotencyByCredentialMigration,
  idempotencyMigration,
  inboxMigration,
  outboxMigration,
  outboxTraceContextMigration,
  type Migration,
} from '@merx/kit';

export const WEBHOOKS_SCHEMA = 'webhooks';

export const webhooksMigrations: Migration[] = [
  outboxMigration,
  outboxTraceContextMigration,
  inboxMigration,
  idempotencyMigration,
  idempotencyByCredentialMigration,
  {
    id: '001_webhooks',
    // merchant_id leads every key, as everywhere: isolation is checkable and tables shard by tenant.
    sql: `
      -- Everything the engine delivers to: the merchant's webhook subscriptions (wh_, managed
      -- through this service's API) and their destinations (dst_, owned by the merchants service
      -- and kept here as it syncs them). One table, so claims, fairness, the in-flight cap,
      -- retries and switching failing endpoints off are one mechanism for both.
      CREATE TABLE {{schema}}.endpoints (
        merchant_id text NOT NULL,
        id text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('subscription', 'destination')),
        url text NOT NULL,
        -- What a request carries: the signed envelope (webhook), or the routed record alone (http).
        format text NOT NULL DEFAULT 'webhook' CHECK (format IN ('webhook', 'http')),
        -- Subscriptions only: destinations receive what the merchants service routes to them.
        topics text[],
        description text,
        status text NOT NULL CHECK (status IN ('enabled', 'disabled')),
        disabled_reason text CHECK (disabled_reason IN ('by_merchant', 'endpoint_gone', 'endpoint_failing')),
        secret text NOT NULL,
        previous_secret text,
        previous_secret_expires_at timestamptz,
        secret_rotated_at timestamptz,
        -- When it was created or last re-enabled: a dead letter switches the endpoint off only if
        -- no attempt succeeded since that delivery's first attempt, and not before this.
        enabled_at timestamptz NOT NULL,
        -- Scheduling: the earliest next_attempt_at among its waiting deliveries (a lower bound;
        -- NULL when it has none), and when a worker last served it (round robin).
        due_at timestamptz,
        last_served_at timestamptz,
        -- Subscriptions: bumped by every change made here. Destinations: the merchants service's
        -- version of the destination, so a sync older than the one applied is recognised.
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, id),
        CHECK ((kind = 'subscription') = (topics IS NOT NULL)),
        CHECK (kind = 'destination' OR format = 'webhook')
      );
      CREATE INDEX endpoints_due ON {{schema}}.endpoints (due_at) WHERE status = 'enabled' AND due_at IS NOT NULL;

      -- Events as received from the bus, kept for the events API and as the payload of deliveries.
      CREATE TABLE {{schema}}.events (
        merchant_id text NOT NULL,
        id text NOT NULL,
        topic text NOT NULL,
        created_at timestamptz NOT NULL,
        -- The payload as subscribers receive it, minus hmac_sha256: text, so it is sent byte for byte.
        payload text NOT NULL,
        received_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (merchant_id, id)
      );
      CREATE INDEX events_by_topic ON {{schema}}.events (merchant_id, topic, id);
      CREATE INDEX events_by_created ON {{schema}}.events (created_at);

      CREATE TABLE {{schema}}.deliveries (
        merchant_id text NOT NULL,
        id text NOT NULL,
        event_id text NOT NULL,
        topic text NOT NULL,
        endpoint_kind text NOT NULL CHECK (endpoint_kind IN ('subscription', 'destination')),
        endpoint_id text NOT NULL,
        -- A routed record is not an event of the events API: its deliveries carry their payload
        -- (as text, sent byte for byte). NULL: the payload is the stored event's.
        payload text,
        -- The internal.record_routed id (rtd_): one delivery per routing, however often the
        -- message arrives, even under another envelope. Replays leave it NULL.
        routed_id text,
        status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failing', 'dead')),
        -- Where the delivery is in the engine: waiting for next_attempt_at, or claimed by a worker.
        claimed_by text,
        claimed_at timestamptz,
        attempt_count integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz,
        first_attempt_at timestamptz,
        last_status_code integer,
        last_error text,
        replay_of text,
        replayed_by text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        completed_at timestamptz,
        PRIMARY KEY (merchant_id, id)
      );
      -- The work queue: what is waiting, per endpoint, in due order.
      CREATE INDEX deliveries_waiting ON {{schema}}.deliveries (merchant_id, endpoint_id, next_attempt_at)
        WHERE status IN ('pending', 'failing') AND claimed_by IS NULL;
      -- In flight: few rows (at most the cap per endpoint), counted per endpoint at every claim.
      CREATE INDEX deliveries_in_flight ON {{schema}}.deliveries (merchant_id, endpoint_id) WHERE claimed_by IS NOT NULL;
      CREATE INDEX deliveries_by_endpoint ON {{schema}}.deliveries (merchant_id, endpoint_id, id);
      CREATE UNIQUE INDEX deliveries_routed ON {{schema}}.deliveries (merchant_id, routed_id) WHERE routed_id IS NOT NULL;
      CREATE INDEX deliveries_dead ON {{schema}}.deliveries (merchant_id, completed_at) WHERE status = 'dead' AND replayed_by IS NULL;
      CREATE INDEX deliveries_by_event ON {{schema}}.deliveries (merchant_id, event_id);

      CREATE TABLE {{schema}}.attempts (
        merchant_id text NOT NULL,
        delivery_id text NOT NULL,
        number integer NOT NULL,
        endpoint_id text NOT NULL,
        started_at timestamptz NOT NULL,
        status_code integer,
        duration_ms integer NOT NULL,
        error text,
        error_message text,
        response_excerpt text,
        PRIMARY KEY (merchant_id, delivery_id, number)
      );
      CREATE INDEX attempts_by_endpoint ON {{schema}}.attempts (merchant_id, endpoint_id, started_at);

      -- Live workers: a worker whose heartbeat stops has its claims returned to the queue.
      CREATE TABLE {{schema}}.workers (
        id text PRIMARY KEY,
        heartbeat_at timestamptz NOT NULL
      );
    `,
  },
  {
    id: '002_events_by_arrival',
    // StreamEvents looks for events that arrived late (an id below what a stream already sent).
    // Built without blocking writes to a table that may be large by the time this release lands.
    transaction: false,
    sql: `CREATE INDEX CONCURRENTLY IF NOT EXISTS events_by_arrival ON {{schema}}.events (merchant_id, received_at)`,
  },
  {
    id: '003_destination_tombstones',
    // A removed destination leaves its removal's version behind, so a sync that overtook the
    // removal (another replica, a redelivery) is recognised as older and never recreates it.
    // Purged with the inbox, after which a redelivered message would not be recognised anyway.
    sql: `
      CREATE TABLE {{schema}}.destination_tombstones (
        merchant_id text NOT NULL,
        id text NOT NULL,
        version integer NOT NULL,
        removed_at timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, id)
      );
      CREATE INDEX destination_tombstones_by_age ON {{schema}}.destination_tombstones (removed_at);
    `,
  },
  {
    id: '004_delivery_queue',
    // The work queue leaves the deliveries table. A claim was an update of the wide delivery row,
    // and so was an attempt's record; both changed columns of its indexes (the waiting queue, the
    // in-flight count, the dead letters), so each wrote a new version of the row elsewhere and an
    // entry in every index of the table, and left as many dead ones for VACUUM. Now:
    // - the deliveries waiting for their next attempt are narrow rows of their own, in due order
    //   per endpoint (queue): inserted with the delivery or its retry, deleted by the claim;
    // - a claim is a narrow row of its own (claims), inserted by the claim and deleted by the
    //   attempt's record or by the release of a dead worker's claims; its key counts an endpoint's
    //   deliveries in flight;
    // - a dead letter is found by dead_at, set only when a delivery dies.
    // No index of deliveries then names a column an attempt's record changes, and the table keeps
    // room on its pages (for pages written from now on), so the record is a heap-only (HOT) update
    // on the row's own page. What was waiting and claimed moves over; a worker still running the
    // previous release has its claims released as interrupted if it never records them.
    sql: `
      CREATE TABLE {{schema}}.queue (
        merchant_id text NOT NULL,
        endpoint_id text NOT NULL,
        next_attempt_at timestamptz NOT NULL,
        delivery_id text NOT NULL,
        PRIMARY KEY (merchant_id, endpoint_id, next_attempt_at, delivery_id)
      );
      CREATE TABLE {{schema}}.claims (
        merchant_id text NOT NULL,
        endpoint_id text NOT NULL,
        delivery_id text NOT NULL,
        worker_id text NOT NULL,
        claimed_at timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, endpoint_id, delivery_id)
      );
      INSERT INTO {{schema}}.queue (merchant_id, endpoint_id, next_attempt_at, delivery_id)
        SELECT merchant_id, endpoint_id, next_attempt_at, id FROM {{schema}}.deliveries
        WHERE status IN ('pending', 'failing') AND claimed_by IS NULL AND next_attempt_at IS NOT NULL;
      INSERT INTO {{schema}}.claims (merchant_id, endpoint_id, delivery_id, worker_id, claimed_at)
        SELECT merchant_id, endpoint_id, id, claimed_by, claimed_at FROM {{schema}}.deliveries WHERE claimed_by IS NOT NULL;
      ALTER TABLE {{schema}}.deliveries ADD COLUMN dead_at timestamptz;
      UPDATE {{schema}}.deliveries SET dead_at = completed_at WHERE status = 'dead';
      CREATE INDEX deliveries_dead_letters ON {{schema}}.deliveries (merchant_id, dead_at) WHERE dead_at IS NOT NULL AND replayed_by IS NULL;
      DROP INDEX {{schema}}.deliveries_dead;
      DROP INDEX {{schema}}.deliveries_waiting;
      DROP INDEX {{schema}}.deliveries_in_flight;
      ALTER TABLE {{schema}}.deliveries DROP COLUMN claimed_by, DROP COLUMN claimed_at;
      ALTER TABLE {{schema}}.deliveries SET (fillfactor = 70);
    `,
  },
  {
    id: '005_events_arrived',
    // StreamEvents is served by one tail per process that follows what arrives for every
    // merchant at once (usecases/event-tail.ts), in arrival order; the id breaks ties, since one
    // fan-out transaction stores many events with the same received_at.
    transaction: false,
    sql: `CREATE INDEX CONCURRENTLY IF NOT EXISTS events_arrived ON {{schema}}.events (received_at, id)`,
  },
  {
    id: '006_drop_events_by_arrival',
    // Its only reader was each stream's own search for late events; the tail's index serves that
    // too, and every stored event no longer writes an entry in both.
    transaction: false,
    sql: `DROP INDEX CONCURRENTLY IF EXISTS {{schema}}.events_by_arrival`,
  },
  {
    id: '007_delivery_lanes',
    // Endpoints whose receivers time out are served in a lane of their own (issue 29), so waiting
    // on them never uses the capacity the others are sent with:
    // - slow_since: since when the endpoint's attempts time out or take MERX_WEBHOOK_SLOW_AFTER
    //   or longer; NULL while they answer in time (the fast lane). A new endpoint starts in the
    //   slow lane, since it has not answered in time yet: thirty subscriptions to a receiver that
    //   never answers hold the slow lane's few requests, not the fast lane's many. Those already
    //   here keep the fast lane they were served in;
    // - a claim keeps the lane it was made in, so a merchant's requests in flight are counted per
    //   lane from its claims alone, however its endpoints change lanes meanwhile.
    // No table is rewritten: existing rows get NULL and false without one (the default of
    // slow_since is set after the column exists, so it applies to new rows only).
    sql: `
      ALTER TABLE {{schema}}.endpoints ADD COLUMN slow_since timestamptz;
      ALTER TABLE {{schema}}.endpoints ALTER COLUMN slow_since SET DEFAULT now();
      ALTER TABLE {{schema}}.claims ADD COLUMN slow boolean NOT NULL DEFAULT false;
    `,
  },
];
