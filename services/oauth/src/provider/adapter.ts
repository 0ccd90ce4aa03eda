import type { Db } from '@merx/kit';
import type { Adapter, AdapterPayload } from 'oidc-provider';

/**
 * One table holds every stateful oidc-provider model (grants, sessions, codes, refresh tokens,
 * opaque tokens...). JWT access tokens are self-contained and never written here.
 * `{{schema}}` is replaced by the kit's `migrateSchema` (or by `oidcMigrationSqlFor`).
 */
export const oidcMigrationSql = `
CREATE TABLE IF NOT EXISTS {{schema}}.oidc_payloads (
  model text NOT NULL,
  id text NOT NULL,
  payload jsonb NOT NULL,
  grant_id text,
  user_code text,
  uid text,
  expires_at timestamptz,
  consumed_at timestamptz,
  PRIMARY KEY (model, id)
);
CREATE INDEX IF NOT EXISTS oidc_payloads_grant_id_idx ON {{schema}}.oidc_payloads (model, grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS oidc_payloads_user_code_idx ON {{schema}}.oidc_payloads (model, user_code) WHERE user_code IS NOT NULL;
CREATE INDEX IF NOT EXISTS oidc_payloads_uid_idx ON {{schema}}.oidc_payloads (model, uid) WHERE uid IS NOT NULL;
CREATE INDEX IF NOT EXISTS oidc_payloads_expires_at_idx ON {{schema}}.oidc_payloads (expires_at) WHERE expires_at IS NOT NULL;
`;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

function checkedSchema(schema: string): string {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name ${schema}`);
  return schema;
}

export function oidcMigrationSqlFor(schema: string): string {
  return oidcMigrationSql.replaceAll('{{schema}}', checkedSchema(schema));
}

interface PayloadRow {
  payload: AdapterPayload;
  consumed_at: Date | string | null;
}

const LIVE = '(expires_at IS NULL OR expires_at > now())';

function toPayload(row: PayloadRow | undefined): AdapterPayload | undefined {
  if (!row) return undefined;
  const payload = typeof row.payload === 'string' ? (JSON.parse(row.payload) as AdapterPayload) : row.payload;
  if (row.consumed_at === null) return payload;
  // oidc-provider reads `consumed` as a truthy epoch-seconds value (see its memory adapter).
  return { ...payload, consumed: Math.floor(new Date(row.consumed_at).getTime() / 1000) };
}

function optionalString(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

class PostgresAdapter implements Adapter {
  readonly #table: string;

  constructor(
    private readonly db: Db,
    schema: string,
    private readonly model: string,
  ) {
    this.#table = `${schema}.oidc_payloads`;
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    // Expiry uses the database clock so that writers and readers on several hosts agree.
    await this.db.query(
      `INSERT INTO ${this.#table} (model, id, payload, grant_id, user_code, uid, expires_at, consumed_at)
       VALUES ($1, $2, $3::jsonb, $4, $5, $6, now() + ($7::double precision * interval '1 second'), NULL)
       ON CONFLICT (model, id) DO UPDATE SET
         payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id, user_code = EXCLUDED.user_code,
         uid = EXCLUDED.uid, expires_at = EXCLUDED.expires_at, consumed_at = NULL`,
      [
        this.model,
        id,
        JSON.stringify(payload),
        optionalString(payload.grantId),
        optionalString(payload.userCode),
        optionalString(payload.uid),
        typeof expiresIn === 'number' && Number.isFinite(expiresIn) ? expiresIn : null,
      ],
    );
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    return this.#findOne('id', id);
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return this.#findOne('user_code', userCode);
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return this.#findOne('uid', uid);
  }

  async consume(id: string): Promise<void> {
    await this.db.query(`UPDATE ${this.#table} SET consumed_at = now() WHERE model = $1 AND id = $2 AND consumed_at IS NULL`, [this.model, id]);
  }

  async destroy(id: string): Promise<void> {
    await this.db.query(`DELETE FROM ${this.#table} WHERE model = $1 AND id = $2`, [this.model, id]);
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.db.query(`DELETE FROM ${this.#table} WHERE model = $1 AND grant_id = $2`, [this.model, grantId]);
  }

  async #findOne(column: 'id' | 'user_code' | 'uid', value: string): Promise<AdapterPayload | undefined> {
    if (typeof value !== 'string' || value.length === 0) return undefined;
    const { rows } = await this.db.query<PayloadRow>(
      `SELECT payload, consumed_at FROM ${this.#table} WHERE model = $1 AND ${column} = $2 AND ${LIVE} LIMIT 1`,
      [this.model, value],
    );
    return toPayload(rows[0]);
  }
}

export interface PostgresAdapterOptions {
  /** Schema holding `oidc_payloads`; default `oauth`. */
  schema?: string;
}

/**
 * oidc-provider calls the factory once per model name and keeps the adapter. Expired rows read
 * as absent; `deleteExpiredOidcPayloads` reclaims their space.
 */
export function createPostgresAdapterFactory(db: Db, options: PostgresAdapterOptions = {}): (model: string) => Adapter {
  const schema = checkedSchema(options.schema ?? 'oauth');
  return (model: string) => new PostgresAdapter(db, schema, model);
}

/** Housekeeping for a periodic job; returns how many expired rows were removed. */
export async function deleteExpiredOidcPayloads(db: Db, options: PostgresAdapterOptions = {}): Promise<number> {
  const schema = checkedSchema(options.schema ?? 'oauth');
  const { rowCount } = await db.query(`DELETE FROM ${schema}.oidc_payloads WHERE expires_at <= now()`);
  return rowCount;
}
