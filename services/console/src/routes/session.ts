import type Koa from 'koa';
import { ApiClient } from '../api/client.js';
import { hashToken, TOKEN_PATTERN } from '../domain/sealing.js';
import { needsRefresh, sessionIsLive, type ConsoleSession } from '../domain/session.js';
import { SignInEnded } from '../oauth/authorization-server.js';
import { deleteSession, findSession, replaceSessionTokens, touchSession } from '../store/sessions-store.js';
import { renderPage, type Console, type SignedIn } from '../web/context.js';
import { html } from '../web/html.js';
import { clearConsoleCookie, setConsoleCookie } from '../web/cookies.js';
import { merchantSummary } from './merchant-summary.js';
import { formOf, fromOwnOrigin, sameToken } from '../web/security.js';

export const SESSION_COOKIE = 'merx_console_session';

/** Path-scoped to the console: the API and the oauth pages never see it. A browser-session cookie; the server ends it anyway. */
export const setSessionCookie = (console: Console, ctx: Koa.Context, sessionId: string) =>
  setConsoleCookie(console, ctx, SESSION_COOKIE, sessionId, { path: '/console' });

export const clearSessionCookie = (console: Console, ctx: Koa.Context) => clearConsoleCookie(console, ctx, SESSION_COOKIE, '/console');

/**
 * One refresh per session at a time in this process: a page that fires several API calls, or two
 * tabs loading at once, must not present the same refresh token twice (the authorization server
 * would take that for a replay and revoke the grant). Across replicas the token version in the
 * row decides which refresh is kept.
 */
const refreshing = new Map<string, Promise<ConsoleSession | undefined>>();

async function freshSession(console: Console, session: ConsoleSession): Promise<ConsoleSession | undefined> {
  if (!needsRefresh(session, console.now())) return session;
  const running = refreshing.get(session.idHash);
  if (running) return running;
  const work = (async () => {
    const latest = await findSession(console.db, console.sealer, session.idHash);
    if (!latest) return undefined;
    if (!needsRefresh(latest, console.now())) return latest;
    try {
      const tokens = await console.authorizationServer.refresh(latest.refreshToken);
      const written = await replaceSessionTokens(console.db, console.sealer, latest, tokens);
      return written ? { ...latest, ...tokens, tokenVersion: latest.tokenVersion + 1 } : findSession(console.db, console.sealer, session.idHash);
    } catch (error) {
      if (!(error instanceof SignInEnded)) throw error;
      console.logger.info({ reason: error.reason, user_id: latest.userId }, 'console session ended by the authorization server');
      await deleteSession(console.db, latest.idHash);
      return undefined;
    }
  })();
  refreshing.set(session.idHash, work);
  try {
    return await work;
  } finally {
    refreshing.delete(session.idHash);
  }
}

function toSignIn(ctx: Koa.Context): void {
  const returnTo = ctx.method === 'GET' ? ctx.url : '/console';
  ctx.status = 303;
  ctx.set('Cache-Control', 'no-store');
  ctx.redirect(`/console/sign-in?return_to=${encodeURIComponent(returnTo)}`);
}

/** The browser's session, if its cookie names a live one. */
export async function currentSession(console: Console, ctx: Koa.Context): Promise<ConsoleSession | undefined> {
  const id = ctx.cookies.get(SESSION_COOKIE);
  if (!id || !TOKEN_PATTERN.test(id)) return undefined;
  const session = await findSession(console.db, console.sealer, hashToken(id));
  if (!session) return undefined;
  if (!sessionIsLive(session, console.now(), console.settings.sessionIdleSeconds)) {
    await deleteSession(console.db, session.idHash);
    return undefined;
  }
  return session;
}

/**
 * Every console page and action past sign-in: a live session (else to the sign-in page), a fresh
 * access token, and for anything but GET the session's CSRF token (form field `_csrf` or header
 * `x-csrf-token`) from a page of this origin.
 */
export function requireSession(console: Console): Koa.Middleware {
  return async function loadSession(ctx, next) {
    const found = await currentSession(console, ctx);
    const session = found && (await freshSession(console, found));
    if (!session) {
      if (ctx.cookies.get(SESSION_COOKIE)) clearSessionCookie(console, ctx);
      if (ctx.method === 'GET' || ctx.method === 'HEAD') return toSignIn(ctx);
      return refuse(console, ctx, 'Your session has ended', 'Sign in again; nothing was changed.');
    }
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      const form = await formOf(ctx);
      const presented = ctx.get('x-csrf-token') || form.get('_csrf');
      if (!fromOwnOrigin(ctx, console.publicOrigin) || !sameToken(presented, session.csrfToken)) {
        console.logger.warn({ user_id: session.userId, path: ctx.path }, 'console form refused: CSRF token missing or wrong');
        return refuse(
          console,
          ctx,
          'This form could not be accepted',
          'It was not sent from a page of this console, or the page is too old. Go back, reload the page and try again; nothing was changed.',
        );
      }
    }
    const now = console.now();
    // The idle clock needs minutes, not milliseconds: one write a minute per session at most.
    if (now.getTime() - session.lastSeenAt.getTime() > 60_000) await touchSession(console.db, session.idHash, now);
    const api = new ApiClient(console.settings.gatewayUrl, session.accessToken);
    const merchant = await merchantSummary(api, session.merchantId);
    const state: SignedIn = { session, api, viewer: { merchantName: merchant.name, mode: merchant.mode, userId: session.userId, csrf: session.csrfToken } };
    (ctx.state as { console?: SignedIn }).console = state;
    await next();
  };
}

function refuse(console: Console, ctx: Koa.Context, title: string, text: string): void {
  renderPage(console, ctx, { title, body: html`<p>${text}</p><p><a href="/console">Back to the console</a></p>` }, 403);
}
