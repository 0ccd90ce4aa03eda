import { currentContext, runInEventContext, updateContext, type Actor, type MerxEvent } from '@merx/kit';

/** Who this service's events name when the message that caused them names nobody (the delivery engine's). */
export const MERCHANTS_ACTOR: Actor = { type: 'system', id: 'merchants' };

/** Events emitted in answer carry the cause's actor; an envelope's context must name one. */
export function nameActorIfMissing(): void {
  if (!currentContext()?.actor) updateContext({ actor: MERCHANTS_ACTOR });
}

/**
 * Runs `work` in the context of the event that caused it, as its own delivery would: a batch of
 * events handled together still emits each answer with its own cause's request id and actor.
 */
export function inCauseContext<T>(cause: MerxEvent, work: () => T): T {
  return runInEventContext(cause, () => {
    nameActorIfMissing();
    return work();
  });
}
