import type Koa from 'koa';
import type { Db, Logger } from '@merx/kit';
import type { ApiClient } from '../api/client.js';
import type { ConsoleSession } from '../domain/session.js';
import type { Sealer } from '../domain/sealing.js';
import type { AuthorizationServer } from '../oauth/authorization-server.js';
import type { ConsoleSettings } from '../settings.js';
import { page, type AssetUrls, type PageOptions, type Viewer } from './layout.js';
import { securityHeaders } from './security.js';

/** Everything the console's routes share, made once at start. */
export interface Console {
  db: Db;
  logger: Logger;
  settings: ConsoleSettings;
  publicOrigin: string;
  sealer: Sealer;
  authorizationServer: AuthorizationServer;
  assets: AssetUrls;
  secureCookies: boolean;
  now(): Date;
}

/** What the session middleware puts on a signed-in request. */
export interface SignedIn {
  session: ConsoleSession;
  api: ApiClient;
  viewer: Viewer;
}

export function signedIn(ctx: Koa.Context): SignedIn {
  const state = (ctx.state as { console?: SignedIn }).console;
  if (!state) throw new Error('a signed-in route was reached without a session');
  return state;
}

export type PageContent = Omit<PageOptions, 'assets' | 'viewer'>;

/** Renders a page of the signed-in console. */
export function renderPage(console: Console, ctx: Koa.Context, content: PageContent, status = 200): void {
  const state = (ctx.state as { console?: SignedIn }).console;
  securityHeaders(ctx);
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = page({ ...content, assets: console.assets, ...(state ? { viewer: state.viewer } : {}) });
}

/** After a successful POST: back to a page (PRG), with a fixed notice chosen by code, never free text from the URL. */
export function redirectWithNotice(ctx: Koa.Context, path: string, notice?: string): void {
  ctx.status = 303;
  ctx.set('Cache-Control', 'no-store');
  ctx.redirect(notice ? `${path}${path.includes('?') ? '&' : '?'}notice=${encodeURIComponent(notice)}` : path);
}

/** The notice a redirect asked for, if it is one of the page's own. */
export function noticeOf(ctx: Koa.Context, notices: Record<string, string>): string | undefined {
  const code = typeof ctx.query.notice === 'string' ? ctx.query.notice : undefined;
  return code ? notices[code] : undefined;
}

/** A query parameter as one string ('' when absent or repeated). */
export function queryText(ctx: Koa.Context, name: string): string {
  const value = ctx.query[name];
  return typeof value === 'string' ? value.trim() : '';
}
