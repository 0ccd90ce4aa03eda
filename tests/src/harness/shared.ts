import { createContractValidator } from '@merx/contracts';
import { startStack, type Stack } from './stack.js';

let shared: Promise<Stack> | undefined;
const validator = createContractValidator();

/** One stack per mocha run (starting the distributed one takes seconds); each test still makes its own merchant. */
export function sharedStack(): Promise<Stack> {
  shared ??= startStack();
  return shared;
}

export async function stopSharedStack(): Promise<void> {
  if (!shared) return;
  const stack = await shared;
  shared = undefined;
  await stack.stop();
}

/** Every event any test caused must match its schema in the event catalogue. */
export async function invalidEventsSoFar(): Promise<string[]> {
  if (!shared) return [];
  const stack = await shared;
  return stack.events.seen.flatMap((event) => validator.validateEvent(event).map((problem) => `${event.topic} ${event.id}: ${problem}`));
}
