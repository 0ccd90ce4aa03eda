import Koa from 'koa';
import { configFields, z } from './config.js';
import { MethodNotAllowed, NotFound } from './errors.js';
import { evaluateReadiness, type CheckState, type ReadinessCheck } from './http.js';
import type { Logger } from './logger.js';
import { metricsRegistry } from './metrics.js';
import { problemMiddleware } from './problem.js';
import { ensurePortFree, listen, PortInUse, type RunningServer } from './server.js';

/**
 * The admin listener: `/metrics`, the detailed `/readyz` and `/healthz` on a port of their own,
 * reached by Prometheus and operators on the service network and never routed by an ingress.
 * The public port keeps only what a load balancer needs (http.ts `healthRoutes`).
 */

/** One service's checks; the embedded process serves every service's on one admin port. */
export interface AdminReadinessSource {
  service: string;
  readiness: ReadinessCheck[];
}

export interface AdminServerOptions {
  port: number;
  host: string;
  logger: Logger;
  sources: AdminReadinessSource[];
}

export interface DetailedReadiness {
  status: 'ready' | 'not_ready';
  /** `<service>.<check>`: the same names whether one process serves one service or all of them. */
  checks: Record<string, CheckState>;
  details: Record<string, string>;
  /** The checks that are degraded: still serving, some routes answer 503 (or a fallback is in use). */
  degraded: string[];
}

/** ADMIN_PORT and ADMIN_HOST, validated with the rest of a process's configuration. */
export const adminListenerSettings = (defaultPort: number, defaultHost: string) => ({
  ADMIN_PORT: configFields.port(defaultPort),
  ADMIN_HOST: z.string().min(1, 'must name an interface (e.g. 127.0.0.1 or 0.0.0.0)').default(defaultHost),
});

export async function detailedReadiness(sources: AdminReadinessSource[]): Promise<DetailedReadiness> {
  const reports = await Promise.all(sources.map(async ({ service, readiness }) => ({ service, report: await evaluateReadiness(service, readiness) })));
  const checks: Record<string, CheckState> = {};
  const details: Record<string, string> = {};
  for (const { service, report } of reports) {
    for (const [name, state] of Object.entries(report.checks)) checks[`${service}.${name}`] = state;
    for (const [name, detail] of Object.entries(report.details)) details[`${service}.${name}`] = detail;
  }
  const ready = reports.every(({ report }) => report.ready);
  const degraded = Object.keys(checks)
    .filter((name) => checks[name] === 'degraded')
    .sort();
  return { status: ready ? 'ready' : 'not_ready', checks, details, degraded };
}

const ADMIN_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

export function createAdminApp(options: Omit<AdminServerOptions, 'port' | 'host'>): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  // No request context or latency histogram: scrapes and probes are not the traffic being measured.
  app.use(problemMiddleware(options.logger));
  app.use(async function adminRoutes(ctx) {
    if (!ADMIN_PATHS.has(ctx.path)) throw new NotFound('route');
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw new MethodNotAllowed(['GET', 'HEAD']);
    if (ctx.path === '/healthz') {
      ctx.body = { status: 'ok' };
      return;
    }
    if (ctx.path === '/readyz') {
      const readiness = await detailedReadiness(options.sources);
      ctx.status = readiness.status === 'ready' ? 200 : 503;
      ctx.body = readiness;
      return;
    }
    if (ctx.path === '/metrics') {
      // Refreshes merx_readiness_check, so a scrape sees the states of now, not of the last probe.
      await detailedReadiness(options.sources);
      ctx.type = metricsRegistry.contentType;
      ctx.body = await metricsRegistry.metrics();
    }
  });
  return app;
}

/** Opens the admin listener; a port in use fails with one clear line (PortInUse). */
export async function startAdminServer(options: AdminServerOptions): Promise<RunningServer> {
  return listen(createAdminApp(options), options.port, options.host).catch(namingAdminPort);
}

/** For main.ts: before anything is started, so a taken admin port stops the process early. */
export async function ensureAdminPortFree(settings: { ADMIN_PORT: number; ADMIN_HOST: string }): Promise<void> {
  await ensurePortFree(settings.ADMIN_PORT, settings.ADMIN_HOST).catch(namingAdminPort);
}

function namingAdminPort(error: unknown): never {
  if (error instanceof PortInUse) throw new PortInUse(error.host, error.port, 'ADMIN_PORT');
  throw error;
}
