import { newId, type Queryable } from '@merx/kit';
import { presentApp, validateAppRegistration } from '../domain/app.js';
import { generateAppCredentials, hashAppSecret } from '../provider/app-clients.js';
import { insertApp } from '../store/apps-store.js';

/** The operator registers a third-party app; its client secret is in this answer only. */
export async function registerApp(db: Queryable, body: unknown, now: Date = new Date()) {
  const registration = validateAppRegistration(body);
  const credentials = generateAppCredentials();
  const app = await insertApp(db, {
    id: newId('app'),
    ...registration,
    clientId: credentials.clientId,
    secretHash: hashAppSecret(credentials.clientSecret),
    createdAt: now,
  });
  return presentApp(app, credentials.clientSecret);
}
