import type { Logger } from './logger.js';

export interface MaintenanceTask {
  name: string;
  run(): Promise<unknown>;
}

/**
 * Housekeeping (expired idempotency keys, expired OAuth artefacts) on a timer that never keeps
 * the process alive and never overlaps itself. Every replica may run it: each task is an
 * idempotent DELETE.
 */
export function scheduleMaintenance(tasks: MaintenanceTask[], logger: Logger, intervalMs = 15 * 60_000): { stop(): void } {
  let running = false;
  const timer = setInterval(async () => {
    if (running) return;
    running = true;
    for (const task of tasks) {
      try {
        const result = await task.run();
        logger.debug({ task: task.name, result }, 'maintenance task done');
      } catch (error) {
        logger.warn({ err: error, task: task.name }, 'maintenance task failed');
      }
    }
    running = false;
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
