import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Tokens at rest: AES-256-GCM under a key derived from the console's client secret. A database
 * dump alone then holds no usable refresh token; rotating the client secret retires every
 * sealed token at once (the sessions simply end).
 */
export class Sealer {
  readonly #key: Buffer;

  constructor(secret: string) {
    this.#key = Buffer.from(hkdfSync('sha256', secret, 'merx-console', 'session tokens v1', 32));
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [iv, cipher.getAuthTag(), body].map((part) => part.toString('base64url')).join('.');
  }

  /** undefined for anything not sealed by this key (tampered, or from before a secret rotation). */
  unseal(sealed: string): string | undefined {
    const [iv, tag, body] = sealed.split('.').map((part) => Buffer.from(part, 'base64url'));
    if (!iv || !tag || !body) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, iv);
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }
}

/** 256 random bits, URL-safe: session ids, sign-in ids, CSRF tokens. */
export const randomToken = () => randomBytes(32).toString('base64url');

/** What the tables keep instead of the ids the browser holds. */
export const hashToken = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
