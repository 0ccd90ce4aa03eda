import Router from '@koa/router';
import type { Console } from '../web/context.js';
import { apiKeyRoutes } from './api-keys.js';
import { requireSession } from './session.js';
import { webhookRoutes } from './webhooks.js';
import { accountRoutes } from './account.js';
import { configurationRoutes } from './configuration.js';

/** Every page past sign-in: a live session, a fresh token, CSRF on every change. */
export function consolePages(console: Console): Router {
  const router = new Router({ prefix: '/console', sensitive: true, strict: false });
  router.use(requireSession(console));
  apiKeyRoutes(console, router);
  webhookRoutes(console, router);
  accountRoutes(console, router);
  configurationRoutes(console, router);
  return router;
}
