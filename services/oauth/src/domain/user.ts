import { fieldPath, type FieldError } from '@merx/kit';
import { MIN_PASSWORD_LENGTH } from './password.js';

export interface User {
  id: string;
  merchantId: string;
  email: string;
  passwordHash: string;
  createdAt: Date;
}

export interface OwnerInput {
  email: string;
  password?: string;
}

// Deliberately loose (one @, a dot in the domain, no spaces): the mailbox's existence is what counts, not RFC 5322 trivia.
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MAX_PASSWORD_LENGTH = 256;

/** Emails compare case-insensitively; they are stored as given but looked up lower-cased. */
export const normaliseEmail = (email: string) => email.trim().toLowerCase();

export function validateOwner(value: unknown, errors: FieldError[]): OwnerInput | undefined {
  if (value === undefined) {
    errors.push({ field: 'owner', code: 'required', message: 'owner is required: { email, password? }' });
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    errors.push({ field: 'owner', code: 'invalid_type', message: 'owner must be an object { email, password? }' });
    return undefined;
  }
  const owner = value as Record<string, unknown>;
  const before = errors.length;
  for (const key of Object.keys(owner)) {
    if (key !== 'email' && key !== 'password') errors.push({ field: fieldPath('owner', key), code: 'unknown_field', message: `${key} is not an owner field` });
  }
  const { email, password } = owner;
  if (typeof email !== 'string' || !EMAIL.test(email.trim()) || email.length > 254) {
    errors.push({ field: 'owner.email', code: email === undefined ? 'required' : 'invalid_email', message: 'owner.email must be an email address' });
  }
  if (password !== undefined) {
    if (typeof password !== 'string') errors.push({ field: 'owner.password', code: 'invalid_type', message: 'owner.password must be a string' });
    else if ([...password].length < MIN_PASSWORD_LENGTH)
      errors.push({ field: 'owner.password', code: 'too_short', message: `owner.password must be at least ${MIN_PASSWORD_LENGTH} characters` });
    else if (password.length > MAX_PASSWORD_LENGTH)
      errors.push({ field: 'owner.password', code: 'too_long', message: `owner.password must be at most ${MAX_PASSWORD_LENGTH} characters` });
  }
  if (errors.length > before) return undefined;
  return { email: (email as string).trim(), ...(typeof password === 'string' ? { password } : {}) };
}

export function presentOwner(user: User, generatedPassword?: string) {
  return { id: user.id, object: 'user' as const, email: user.email, ...(generatedPassword === undefined ? {} : { password: generatedPassword }) };
}
