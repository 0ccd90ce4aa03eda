/**
 * Polls `read` until `done` holds for what it answered: for what happens on its own time after a
 * request (fan-out, routing, delivery, a sandbox reset), so a test waits for the condition itself
 * rather than for a guess at how long it takes.
 */
export async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
  timeoutMs = 20_000,
  /** Between reads: longer for a read that costs the server (pages of a large list) or counts against a throttle. */
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms; last: ${JSON.stringify(value).slice(0, 2_000)}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
