import Router from '@koa/router';
import type Koa from 'koa';
import { errors, type InteractionDetails } from 'oidc-provider';
import { currentContext, type Db, type Logger } from '@merx/kit';
import { accountKey, addressKey, DEFAULT_SIGN_IN_THROTTLE, secondsLocked, type SignInThrottle } from '../domain/login-throttle.js';
import { createHashingGate, hashPassword, PasswordHashingBusy, verifyPassword, type HashingGate } from '../domain/password.js';
import type { ProviderSlot } from '../provider/index.js';
import { findAppByClientId } from '../store/apps-store.js';
import { findMerchant } from '../store/accounts-store.js';
import { clearLoginFailures, findLoginFailures, recordLoginFailure } from '../store/login-throttle-store.js';
import { findUserByEmail, findUserWithMerchantStatus } from '../store/users-store.js';
import { recordInstallation } from '../usecases/record-installation.js';
import { createCsrf } from './csrf.js';
import { consentPage, loginPage, messagePage } from './pages.js';
import { trustedMerchantId } from '@merx/kit';

export interface InteractionDeps {
  slot: ProviderSlot;
  db: Db;
  logger: Logger;
  audience: string;
  /** Keys the CSRF field's HMAC; the cookie secret serves. */
  secret: string;
  /** An `auth.denied` attempt, for whoever audits them. */
  onLoginDenied?(attempt: { email: string; clientId: string | undefined; ip: string }): void;
  /** Growing delays after failed sign-ins, per account and per client address. */
  signInThrottle?: SignInThrottle;
  /** Caps concurrent password hashing (each ~130 MiB and ~100 ms of CPU). */
  hashing?: HashingGate;
  now?: () => Date;
  /** Names of Merx's own clients (the console), which are not registered apps. */
  firstPartyNames?: ReadonlyMap<string, string>;
}

const MAX_FORM_BYTES = 16 * 1024;

async function readForm(ctx: Koa.Context): Promise<URLSearchParams> {
  if (!ctx.is('application/x-www-form-urlencoded')) return new URLSearchParams();
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) ctx.throw(413);
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function renderPage(ctx: Koa.Context, status: number, page: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  // The pages hold CSRF fields and may show an email: never cached, never framed, no script at all.
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.body = page;
}

/** The scopes the consent page offers: what the app asked for, limited to what it is registered for. */
function requestedScopes(details: InteractionDetails, audience: string, appScopes: string[]): string[] {
  const missing = details.prompt.details.missingResourceScopes?.[audience];
  const asked = missing ?? (typeof details.params.scope === 'string' ? details.params.scope.split(' ') : appScopes);
  return appScopes.filter((scope) => asked.includes(scope));
}

/**
 * The login and consent pages oidc-provider sends the browser to (`interactions.url`). They are
 * plain server-rendered forms; each POST checks the per-interaction CSRF field and answers with
 * a 303 to wherever oidc-provider resumes the authorization request.
 */
export function interactionRoutes(deps: InteractionDeps): Router {
  const base = new URL(deps.slot.provider.issuer).pathname.replace(/\/+$/, '');
  const router = new Router({ prefix: `${base}/interaction`, sensitive: true });
  const csrf = createCsrf(deps.secret, `${base}/interaction`);
  const dummyHash = hashPassword('timing-equaliser-for-unknown-emails');
  const throttle = deps.signInThrottle ?? DEFAULT_SIGN_IN_THROTTLE;
  const hashing = deps.hashing ?? createHashingGate(2, 16);
  const now = deps.now ?? (() => new Date());
  const urls = (uid: string) => ({
    login: `${base}/interaction/${uid}/login`,
    confirm: `${base}/interaction/${uid}/confirm`,
    abort: `${base}/interaction/${uid}/abort`,
  });

  /** The interaction this browser is in, if it is the one in the URL; otherwise an explanatory page. */
  async function interactionOf(ctx: Koa.Context): Promise<InteractionDetails | undefined> {
    try {
      const details = await deps.slot.provider.interactionDetails(ctx.req, ctx.res);
      if (details.uid === ctx.params.uid) return details;
    } catch (error) {
      if (!(error instanceof errors.SessionNotFound)) throw error;
    }
    renderPage(ctx, 400, messagePage('This sign-in link has expired', 'Go back to the app and start again.'));
    return undefined;
  }

  async function appNameOf(details: InteractionDetails) {
    const clientId = typeof details.params.client_id === 'string' ? details.params.client_id : undefined;
    const firstParty = clientId ? deps.firstPartyNames?.get(clientId) : undefined;
    const app = clientId && !firstParty ? await findAppByClientId(deps.db, clientId) : undefined;
    return { app, name: firstParty ?? app?.name ?? 'an app' };
  }

  async function showConsent(ctx: Koa.Context, details: InteractionDetails): Promise<void> {
    const { app, name } = await appNameOf(details);
    const user = details.session?.accountId ? await findUserWithMerchantStatus(deps.db, details.session.accountId) : undefined;
    const merchant = user ? await findMerchant(deps.db, trustedMerchantId(user.merchantId)) : undefined;
    if (!app || !user || !merchant) return renderPage(ctx, 400, messagePage('This request cannot continue', 'Go back to the app and start again.'));
    const u = urls(details.uid);
    renderPage(
      ctx,
      200,
      consentPage({
        appName: name,
        merchantName: merchant.name,
        email: user.email,
        scopes: requestedScopes(details, deps.audience, app.scopes),
        confirmAction: u.confirm,
        abortAction: u.abort,
        csrf: csrf.issue(ctx, details.uid),
      }),
    );
  }

  const finish = async (ctx: Koa.Context, result: Record<string, unknown>, mergeWithLastSubmission: boolean) => {
    const returnTo = await deps.slot.provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission });
    ctx.status = 303;
    ctx.set('Cache-Control', 'no-store');
    ctx.redirect(returnTo);
  };

  const csrfRejected = (ctx: Koa.Context) =>
    renderPage(ctx, 403, messagePage('Please try again', 'This form expired or was not sent from this page. Go back to the app and start again.'));

  router.get('/:uid', async (ctx) => {
    const details = await interactionOf(ctx);
    if (!details) return;
    if (details.prompt.name === 'consent') return showConsent(ctx, details);
    const { name } = await appNameOf(details);
    renderPage(ctx, 200, loginPage({ appName: name, action: urls(details.uid).login, csrf: csrf.issue(ctx, details.uid) }));
  });

  router.post('/:uid/login', async (ctx) => {
    const form = await readForm(ctx);
    const details = await interactionOf(ctx);
    if (!details) return;
    if (!csrf.verify(ctx, details.uid, form.get('csrf'))) return csrfRejected(ctx);
    const email = (form.get('email') ?? '').trim().slice(0, 254);
    const password = (form.get('password') ?? '').slice(0, 256);
    const ip = currentContext()?.ip ?? ctx.ip;
    const keys = { account: accountKey(email), address: addressKey(ip) };
    const loginAgain = async (status: number, error: string) => {
      const { name } = await appNameOf(details);
      renderPage(ctx, status, loginPage({ appName: name, action: urls(details.uid).login, csrf: csrf.issue(ctx, details.uid), email, error }));
    };

    // A locked account or address is refused before any password is hashed.
    const failures = await findLoginFailures(deps.db, [keys.account, keys.address]);
    const wait = Math.max(secondsLocked(failures.get(keys.account), now()), secondsLocked(failures.get(keys.address), now()));
    if (wait > 0) {
      deps.logger.warn({ event: 'auth.throttled', email, ip, retry_after: wait }, 'sign-in refused: too many failed attempts');
      ctx.set('Retry-After', String(wait));
      return loginAgain(429, `Too many failed sign-in attempts. Try again in ${wait} second${wait === 1 ? '' : 's'}.`);
    }

    const user = email ? await findUserByEmail(deps.db, email) : undefined;
    let matches: boolean;
    try {
      matches = await hashing.run(async () => verifyPassword(password, user?.passwordHash ?? (await dummyHash)));
    } catch (error) {
      if (!(error instanceof PasswordHashingBusy)) throw error;
      ctx.set('Retry-After', '1');
      return loginAgain(503, 'Too many people are signing in right now. Try again in a moment.');
    }
    const account = user && matches ? await findUserWithMerchantStatus(deps.db, user.id) : undefined;
    if (!account || account.merchantStatus !== 'active') {
      await deps.db.transaction(async (tx) => {
        await recordLoginFailure(tx, keys.account, now(), throttle.account);
        await recordLoginFailure(tx, keys.address, now(), throttle.address);
      });
      deps.onLoginDenied?.({ email, clientId: details.params.client_id, ip });
      return loginAgain(401, 'The email or password is not correct.');
    }
    await clearLoginFailures(deps.db, keys.account);
    await finish(ctx, { login: { accountId: account.id } }, false);
  });

  router.post('/:uid/confirm', async (ctx) => {
    const form = await readForm(ctx);
    const details = await interactionOf(ctx);
    if (!details) return;
    if (!csrf.verify(ctx, details.uid, form.get('csrf'))) return csrfRejected(ctx);
    const accountId = details.session?.accountId;
    const { app } = await appNameOf(details);
    if (details.prompt.name !== 'consent' || !accountId || !app)
      return renderPage(ctx, 400, messagePage('This request cannot continue', 'Go back to the app and start again.'));
    const { Grant } = deps.slot.provider;
    const existing = details.grantId ? await Grant.find(details.grantId) : undefined;
    const grant = existing ?? new Grant({ accountId, clientId: app.clientId });
    const scopes = requestedScopes(details, deps.audience, app.scopes);
    if (scopes.length > 0) {
      grant.addResourceScope(deps.audience, scopes.join(' '));
      // Merx scopes are also in the provider's scope list (client credentials needs them there), so its consent check counts them as OIDC scopes too.
      grant.addOIDCScope(scopes.join(' '));
    }
    const grantId = await grant.save();
    const granted = grant.getResourceScopeFiltered(deps.audience, app.scopes).split(' ').filter(Boolean);
    await recordInstallation(deps.db, { userId: accountId, appId: app.id, grantId, scopes: granted });
    await finish(ctx, { consent: { grantId } }, true);
  });

  router.post('/:uid/abort', async (ctx) => {
    const form = await readForm(ctx);
    const details = await interactionOf(ctx);
    if (!details) return;
    if (!csrf.verify(ctx, details.uid, form.get('csrf'))) return csrfRejected(ctx);
    await finish(ctx, { error: 'access_denied', error_description: 'The merchant did not allow access.' }, false);
  });

  return router;
}
