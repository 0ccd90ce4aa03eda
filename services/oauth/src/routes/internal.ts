import Router from '@koa/router';
import { ValidationFailed, type RevocationSnapshot } from '@merx/kit';

/**
 * Revoked credentials for the token verifiers of the other processes, loaded at their start.
 *
 * Protection: the path is served on the oauth service's own port, which only the service network
 * reaches (Compose publishes no port but the gateway's; in Kubernetes it is a ClusterIP service),
 * and the gateway never routes `/internal/`. The answer holds public client ids, merchant ids and
 * times, nothing that authenticates; it is read-only and changes nothing.
 */
export function internalRoutes(loadRevocations: (since: Date) => Promise<RevocationSnapshot>): Router {
  const router = new Router({ prefix: '/internal/v1', strict: false });
  router.get('internal.revocations.list', '/revocations', async (ctx) => {
    const since = typeof ctx.query.since === 'string' ? new Date(ctx.query.since) : new Date(0);
    if (Number.isNaN(since.getTime())) throw new ValidationFailed([{ field: 'since', code: 'invalid_timestamp', message: 'since must be an ISO 8601 time' }]);
    ctx.body = await loadRevocations(since);
  });
  return router;
}
