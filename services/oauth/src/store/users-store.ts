import { Conflict, type MerchantId, type Queryable } from '@merx/kit';
import { normaliseEmail, type User } from '../domain/user.js';
import { OAUTH_SCHEMA } from './migrations.js';

interface UserRow {
  id: string;
  merchant_id: string;
  email: string;
  password_hash: string;
  created_at: Date;
}

const toUser = (row: UserRow): User => ({
  id: row.id,
  merchantId: row.merchant_id,
  email: row.email,
  passwordHash: row.password_hash,
  createdAt: new Date(row.created_at),
});

const isUniqueViolation = (error: unknown) => (error as { code?: string } | null)?.code === '23505';

export async function insertUserForMerchant(tx: Queryable, merchantId: MerchantId, user: Omit<User, 'merchantId'>): Promise<User> {
  try {
    // ON CONFLICT keeps the transaction usable (PostgreSQL aborts it on a raised unique violation).
    const { rows } = await tx.query<UserRow>(
      `INSERT INTO ${OAUTH_SCHEMA}.users (id, merchant_id, email, password_hash, created_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT DO NOTHING RETURNING *`,
      [user.id, merchantId, user.email, user.passwordHash, user.createdAt],
    );
    if (rows[0]) return toUser(rows[0]);
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
  }
  throw new Conflict('A user with this email already exists.');
}

/** The login page's lookup: by email alone, since a user belongs to exactly one merchant. */
export async function findUserByEmail(db: Queryable, email: string): Promise<User | undefined> {
  const { rows } = await db.query<UserRow>(`SELECT * FROM ${OAUTH_SCHEMA}.users WHERE lower(email) = $1`, [normaliseEmail(email)]);
  return rows[0] ? toUser(rows[0]) : undefined;
}

/** For token claims: the merchant a user acts for, and whether it may still act. */
export async function findUserWithMerchantStatus(db: Queryable, userId: string): Promise<(User & { merchantStatus: 'active' | 'suspended' }) | undefined> {
  const { rows } = await db.query<UserRow & { merchant_status: 'active' | 'suspended' }>(
    `SELECT u.*, m.status AS merchant_status FROM ${OAUTH_SCHEMA}.users u JOIN ${OAUTH_SCHEMA}.merchants m ON m.id = u.merchant_id WHERE u.id = $1`,
    [userId],
  );
  const row = rows[0];
  return row ? { ...toUser(row), merchantStatus: row.merchant_status } : undefined;
}
