import { resetServices } from '@merx/contracts';
import { fieldPath, ValidationFailed } from '@merx/kit';

export type ResetService = (typeof resetServices)[number];

export interface ServiceReport {
  service: ResetService;
  status: 'pending' | 'completed';
  removed: Record<string, number>;
  seeded: Record<string, number>;
  completed_at: string | null;
}

export interface SandboxReset {
  id: string;
  merchantId: string;
  seed: boolean;
  status: 'running' | 'completed';
  services: ServiceReport[];
  requestedAt: Date;
  completedAt: Date | null;
}

/** `{}`, no body, or `{"seed": true|false}`. */
export function validateResetRequest(body: unknown): { seed: boolean } {
  if (body === undefined || body === null) return { seed: false };
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new ValidationFailed([{ field: '(body)', code: 'invalid_type', message: 'the body must be a JSON object such as {"seed": true}' }]);
  }
  const { seed, ...rest } = body as Record<string, unknown>;
  const errors = Object.keys(rest).map((field) => ({ field: fieldPath('', field), code: 'unknown_field', message: `${field} is not a reset option` }));
  if (seed !== undefined && typeof seed !== 'boolean') errors.push({ field: 'seed', code: 'invalid_type', message: 'seed must be true or false' });
  if (errors.length > 0) throw new ValidationFailed(errors);
  return { seed: seed === true };
}

export function newReset(id: string, merchantId: string, seed: boolean, now: Date): SandboxReset {
  return {
    id,
    merchantId,
    seed,
    status: 'running',
    services: resetServices.map((service) => ({ service, status: 'pending', removed: {}, seeded: {}, completed_at: null })),
    requestedAt: now,
    completedAt: null,
  };
}

/** A service's report folded in; the reset completes when the last one arrives. Reports repeat harmlessly. */
export function withReport(reset: SandboxReset, report: Omit<ServiceReport, 'status'>, now: Date): SandboxReset {
  const services = reset.services.map((entry) => (entry.service === report.service ? { ...report, status: 'completed' as const } : entry));
  const done = services.every((entry) => entry.status === 'completed');
  return { ...reset, services, status: done ? 'completed' : 'running', completedAt: done ? (reset.completedAt ?? now) : null };
}

export function presentReset(reset: SandboxReset) {
  return {
    id: reset.id,
    object: 'sandbox_reset' as const,
    status: reset.status,
    seed: reset.seed,
    services: reset.services,
    requested_at: reset.requestedAt.toISOString(),
    completed_at: reset.completedAt ? reset.completedAt.toISOString() : null,
  };
}
