import { idempotencyMigration, inboxMigration, outboxMigration, type Migration } from '@merx/kit';

export const WEBHOOKS_SCHEMA = 'webhooks';

export const webhooksMigrations: Migration[] = [
  outboxMigration,
  inboxMigration,
  idempotencyMigration,
  {
    id: '001_webhooks',
    // merchant_id leads every key, as everywhere: isolation is checkable and tables shard by tenant.
    sql: `
      CREATE TABLE {{schema}}.subscriptions (
        merchant_id text NOT NULL,
        id text NOT NULL,
        url text NOT NULL,
        topics text[] NOT NULL,
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
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (merchant_id, id)
      );
      CREATE INDEX subscriptions_due ON {{schema}}.subscriptions (due_at) WHERE status = 'enabled' AND due_at IS NOT NULL;

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
        subscription_id text NOT NULL,
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
      CREATE INDEX deliveries_waiting ON {{schema}}.deliveries (merchant_id, subscription_id, next_attempt_at)
        WHERE status IN ('pending', 'failing') AND claimed_by IS NULL;
      -- In flight: few rows (at most the cap per endpoint), counted per endpoint at every claim.
      CREATE INDEX deliveries_in_flight ON {{schema}}.deliveries (merchant_id, subscription_id) WHERE claimed_by IS NOT NULL;
      CREATE INDEX deliveries_by_subscription ON {{schema}}.deliveries (merchant_id, subscription_id, id);
      CREATE INDEX deliveries_dead ON {{schema}}.deliveries (merchant_id, completed_at) WHERE status = 'dead' AND replayed_by IS NULL;
      CREATE INDEX deliveries_by_event ON {{schema}}.deliveries (merchant_id, event_id);

      CREATE TABLE {{schema}}.attempts (
        merchant_id text NOT NULL,
        delivery_id text NOT NULL,
        number integer NOT NULL,
        subscription_id text NOT NULL,
        started_at timestamptz NOT NULL,
        status_code integer,
        duration_ms integer NOT NULL,
        error text,
        error_message text,
        response_excerpt text,
        PRIMARY KEY (merchant_id, delivery_id, number)
      );
      CREATE INDEX attempts_by_subscription ON {{schema}}.attempts (merchant_id, subscription_id, started_at);

      -- Live workers: a worker whose heartbeat stops has its claims returned to the queue.
      CREATE TABLE {{schema}}.workers (
        id text PRIMARY KEY,
        heartbeat_at timestamptz NOT NULL
      );
    `,
  },
];
