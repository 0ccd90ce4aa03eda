import type Koa from 'koa';
import { newId } from '@merx/kit';
import { ApiProblem } from '../api/client.js';
import { deleteSession } from '../store/sessions-store.js';
import { renderPage, type Console, type SignedIn } from '../web/context.js';
import { html } from '../web/html.js';
import { clearSessionCookie } from './session.js';

function explain(problem: ApiProblem): { status: number; title: string; text: string } {
  switch (problem.status) {
    case 403:
      return { status: 403, title: 'You cannot do this', text: `Your account does not have the permission this needs (${problem.detail}).` };
    case 404:
      return { status: 404, title: 'Not found', text: 'Nothing with this id exists in your account. It may have been deleted, or the link is wrong.' };
    case 429:
      return {
        status: 429,
        title: 'Too many requests',
        text: `Your account reached a rate limit. Try again in ${problem.retryAfterSeconds ?? 'a few'} seconds.`,
      };
    case 409:
    case 422:
      return { status: problem.status, title: 'This cannot be done', text: problem.detail };
    default:
      return problem.status >= 500
        ? { status: 503, title: 'Merx could not answer', text: 'A service did not answer in time. Try again in a moment.' }
        : { status: problem.status, title: 'The request was refused', text: problem.detail };
  }
}

/**
 * What a page shows when the API refuses or fails: the problem in plain words and its request id
 * (for support), never a stack. A 401 means the user's tokens are no longer accepted (a suspended
 * merchant, a revoked grant): the session ends.
 */
export function pageErrors(console: Console): Koa.Middleware {
  return async function renderErrors(ctx, next) {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        renderPage(
          console,
          ctx,
          { title: 'Page not found', body: html`<p>There is no console page at this address.</p><p><a href="/console">Go to the overview</a></p>` },
          404,
        );
      }
    } catch (error) {
      if (error instanceof ApiProblem && error.status === 401) {
        const state = (ctx.state as { console?: SignedIn }).console;
        if (state) await deleteSession(console.db, state.session.idHash);
        clearSessionCookie(console, ctx);
        (ctx.state as { console?: SignedIn }).console = undefined;
        return renderPage(
          console,
          ctx,
          {
            title: 'Your session has ended',
            body: html`<p>Merx no longer accepts this session (${error.detail}).</p><p><a class="button" href="/console/sign-in">Sign in again</a></p>`,
          },
          401,
        );
      }
      if (error instanceof ApiProblem) {
        const shown = explain(error);
        return renderPage(
          console,
          ctx,
          {
            title: shown.title,
            body: html`<p>${shown.text}</p>${error.requestId ? html`<p class="hint">Request id <code>${error.requestId}</code></p>` : ''}<p><a href="/console">Go to the overview</a></p>`,
          },
          shown.status,
        );
      }
      if ((error as { status?: number }).status === 413) {
        return renderPage(console, ctx, { title: 'Too much data', body: html`<p>The form was larger than the console accepts.</p>` }, 413);
      }
      const errorId = newId('req');
      console.logger.error({ err: error, error_id: errorId, path: ctx.path }, 'console page failed');
      renderPage(
        console,
        ctx,
        { title: 'Something went wrong', body: html`<p>The console could not show this page. Error id <code>${errorId}</code>.</p>` },
        500,
      );
    }
  };
}

/** For form routes: a refusal the form can show next to its fields, or anything else rethrown. */
export function formProblem(error: unknown): ApiProblem {
  if (error instanceof ApiProblem && (error.status === 422 || error.status === 409 || error.status === 400)) return error;
  throw error;
}
