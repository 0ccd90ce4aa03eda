import { AsyncLocalStorage } from 'node:async_hooks';

export interface Actor {
  type: 'api_key' | 'app' | 'user' | 'operator' | 'system';
  id: string;
}

/**
 * What travels with a unit of work (an HTTP request or a bus delivery) so that logs, events and
 * later the audit log can say who did what, without threading it through every call.
 */
export interface RequestContext {
  requestId: string;
  merchantId?: string;
  actor?: Actor;
  ip?: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

export function runWithContext<T>(context: RequestContext, work: () => T): T {
  return storage.run(context, work);
}

export function currentContext(): RequestContext | undefined {
  return storage.getStore();
}

/** Later middleware (auth) learns the merchant after the context was opened. */
export function updateContext(patch: Partial<RequestContext>): void {
  const context = storage.getStore();
  if (context) Object.assign(context, patch);
}
