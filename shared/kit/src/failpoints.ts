/**
 * Named points in the code where a test can make the process die, as a crash at exactly that
 * instant would (in the manner of etcd's gofail and TiKV's fail-rs). Off unless the process was
 * started with MERX_FAILPOINTS naming the point (`idempotency.answer_committed=crash`); nothing
 * else ever reads the variable. Used by the tests that prove a crash there loses nothing.
 */
const armed = new Map(
  (process.env.MERX_FAILPOINTS ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const [name, action = 'crash'] = entry.split('=');
      return [name!, action] as const;
    }),
);

export function failpoint(name: string): void {
  if (armed.get(name) === 'crash') process.kill(process.pid, 'SIGKILL');
}
