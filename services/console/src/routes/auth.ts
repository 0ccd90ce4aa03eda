import Router from '@koa/router';
import type Koa from 'koa';
import { hashToken, randomToken, TOKEN_PATTERN } from '../domain/sealing.js';
import { safeReturnPath } from '../domain/session.js';
import { deleteSession, insertSession, insertSignIn, SIGN_IN_TTL_MS, takeSignIn } from '../store/sessions-store.js';
import { renderPage, signedIn, type Console } from '../web/context.js';
import { html } from '../web/html.js';
import { clearConsoleCookie, setConsoleCookie } from '../web/cookies.js';
import { clearSessionCookie, currentSession, requireSession, setSessionCookie } from './session.js';

const SIGN_IN_COOKIE = 'merx_console_sign_in';

function signInProblem(console: Console, ctx: Koa.Context, text: string): void {
  renderPage(
    console,
    ctx,
    { title: 'Sign-in did not complete', body: html`<p>${text}</p><p><a class="button" href="/console/sign-in">Sign in again</a></p>` },
    400,
  );
}

/**
 * Sign-in is authorization code + PKCE against Merx's own login page. The pending sign-in (state,
 * verifier, where to return) waits server-side under a random id the browser holds in a cookie
 * scoped to the callback, so a code can only finish the sign-in of the browser that started it.
 */
export function authRoutes(console: Console): Router {
  const router = new Router({ prefix: '/console', sensitive: true });

  router.get('/sign-in', async (ctx) => {
    const returnTo = safeReturnPath(ctx.query.return_to);
    if (await currentSession(console, ctx)) {
      ctx.status = 303;
      return ctx.redirect(returnTo);
    }
    const { url, state, codeVerifier } = await console.authorizationServer.beginSignIn();
    const id = randomToken();
    await insertSignIn(console.db, console.sealer, { idHash: hashToken(id), state, codeVerifier, returnTo, createdAt: console.now() });
    setConsoleCookie(console, ctx, SIGN_IN_COOKIE, id, { path: '/console/auth', maxAgeMs: SIGN_IN_TTL_MS });
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 303;
    ctx.redirect(url);
  });

  router.get('/auth/callback', async (ctx) => {
    const id = ctx.cookies.get(SIGN_IN_COOKIE);
    clearConsoleCookie(console, ctx, SIGN_IN_COOKIE, '/console/auth');
    const pending = id && TOKEN_PATTERN.test(id) ? await takeSignIn(console.db, console.sealer, hashToken(id), console.now()) : undefined;
    if (!pending) return signInProblem(console, ctx, 'This sign-in was started in another browser or took too long.');
    if (typeof ctx.query.error === 'string') return signInProblem(console, ctx, 'The sign-in was cancelled.');
    let tokens;
    try {
      tokens = await console.authorizationServer.finishSignIn(new URL(ctx.url, console.publicOrigin), pending);
    } catch (error) {
      console.logger.warn({ err: error }, 'console sign-in failed at the code exchange');
      return signInProblem(console, ctx, 'Merx could not confirm this sign-in.');
    }
    const sessionId = randomToken();
    const now = console.now();
    const expiresAt = new Date(now.getTime() + console.settings.sessionMaxAgeSeconds * 1000);
    await insertSession(console.db, console.sealer, {
      idHash: hashToken(sessionId),
      ...tokens,
      csrfToken: randomToken(),
      createdAt: now,
      lastSeenAt: now,
      expiresAt,
    });
    console.logger.info({ user_id: tokens.userId, merchant_id: tokens.merchantId }, 'console sign-in');
    setSessionCookie(console, ctx, sessionId);
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 303;
    ctx.redirect(pending.returnTo);
  });

  router.post('/sign-out', requireSession(console), async (ctx) => {
    const { session } = signedIn(ctx);
    await deleteSession(console.db, session.idHash);
    clearSessionCookie(console, ctx);
    // The grant ends at the authorization server too; the session is gone from here whatever it answers.
    await console.authorizationServer
      .revoke(session.refreshToken)
      .catch((error: unknown) => console.logger.warn({ err: error }, 'could not revoke the refresh token at sign-out'));
    (ctx.state as { console?: unknown }).console = undefined;
    renderPage(console, ctx, {
      title: 'You are signed out',
      body: html`<p>Your session has ended and its tokens were revoked.</p><p><a class="button" href="/console/sign-in">Sign in again</a></p>`,
    });
  });

  return router;
}
