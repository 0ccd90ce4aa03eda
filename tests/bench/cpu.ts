import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';

/**
 * Where the CPU went during a scenario, from /proc (Linux only): ticks per process between two
 * snapshots. Our own processes are named by pid, PostgreSQL, RabbitMQ and Redis by command name,
 * and whatever is left of the machine's busy time is "other" (kernel networking, anyone else's tests).
 * PostgreSQL's sessions are told apart by the database their process title names, so a session
 * of someone else's tests on the same server counts as "other", not as the scenario's work.
 *
 * The figures are CPU milliseconds, not shares of a core: divided by the operations the window
 * served they give CPU ms per operation, which moves far less with a noisy neighbour than req/s
 * (a stolen tick slows the run but is not counted as anyone's work).
 */
export interface CpuUsage {
  /** Wall-clock length of the window, ms. */
  windowMs: number;
  /**
   * CPU ms in the window by group: each named process, `postgres`, `rabbitmq`, `redis`;
   * `sum` = all of those (the work of the operation); `other` = the machine's remaining busy time;
   * `steal` = time the hypervisor gave our virtual CPUs to another guest; `total` = the machine's
   * busy time without steal.
   */
  ms: Record<string, number>;
}

/** Percent of one core by group (a 2-core machine tops out at 200 in total, steal included). */
export type CpuShare = Record<string, number>;

interface Snapshot {
  at: number;
  machineBusy: number;
  /** Time the virtual CPUs were ready but the host ran someone else: a noisy neighbour. */
  steal: number;
  perPid: Map<number, ProcessTicks>;
}

interface ProcessTicks {
  comm: string;
  ticks: number;
  /** A PostgreSQL session's database, from its process title; undefined for the server's own processes. */
  database?: string;
}

const available = existsSync('/proc/stat');
const ticksPerSecond = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** The servers every mode leans on, by command name (of PostgreSQL's sessions, only the run's own: see cpuUsage). */
const COMMAND_GROUPS: Record<string, string> = { postgres: 'postgres', 'beam.smp': 'rabbitmq', 'redis-server': 'redis' };

function machineTicks(): { busy: number; steal: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: all but idle, iowait and steal is work done here
  const busy = fields.slice(0, 7).reduce((sum, value, index) => (index === 3 || index === 4 ? sum : sum + value), 0);
  return { busy, steal: fields[7] ?? 0 };
}

/**
 * A PostgreSQL backend retitles itself `postgres: [cluster: ]user database host(port) state`; the
 * postmaster and its helpers (checkpointer, walwriter…) do not name a client, and serve everyone.
 */
const SESSION_TITLE = /^postgres: (?:\S+: )?\S+ (\S+) (?:\[local\]|\S+\(\d+\))/;

function sessionDatabase(pid: string): string | undefined {
  try {
    return SESSION_TITLE.exec(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '))?.[1];
  } catch {
    return undefined;
  }
}

function processTicks(): Map<number, ProcessTicks> {
  const result = new Map<number, ProcessTicks>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const rest = stat.slice(close + 2).split(' ');
      // fields 14 and 15 of stat (utime, stime); `rest` starts at field 3
      const ticks = Number(rest[11]) + Number(rest[12]);
      result.set(Number(entry), comm === 'postgres' ? { comm, ticks, database: sessionDatabase(entry) } : { comm, ticks });
    } catch {
      /* exited meanwhile */
    }
  }
  return result;
}

export function cpuSnapshot(): Snapshot | undefined {
  if (!available) return undefined;
  const machine = machineTicks();
  return { at: performance.now(), machineBusy: machine.busy, steal: machine.steal, perPid: processTicks() };
}

/**
 * CPU ms per group between two snapshots; `named` maps labels to pids. `database`: the scenario's
 * PostgreSQL database, whose sessions count as `postgres`; sessions of other databases (another
 * run's tests) are left to `other`, and without a database (embedded mode) every session is.
 */
export function cpuUsage(start: Snapshot | undefined, end: Snapshot | undefined, named: Record<string, number>, database?: string): CpuUsage | undefined {
  if (!start || !end) return undefined;
  const msOf = (ticks: number) => (ticks / ticksPerSecond) * 1000;
  const labelOfPid = new Map(Object.entries(named).map(([label, pid]) => [pid, label]));
  const ticks: Record<string, number> = {};
  for (const label of [...Object.keys(named), ...Object.values(COMMAND_GROUPS)]) ticks[label] = 0;
  let attributed = 0;
  for (const [pid, after] of end.perPid) {
    const someoneElsesSession = after.database !== undefined && after.database !== database;
    const label = labelOfPid.get(pid) ?? (someoneElsesSession ? undefined : COMMAND_GROUPS[after.comm]);
    if (!label) continue;
    const used = after.ticks - (start.perPid.get(pid)?.ticks ?? 0);
    ticks[label] = (ticks[label] ?? 0) + used;
    attributed += used;
  }
  const ms: Record<string, number> = {};
  for (const [label, value] of Object.entries(ticks)) ms[label] = msOf(value);
  ms.sum = msOf(attributed);
  ms.other = Math.max(0, msOf(end.machineBusy - start.machineBusy - attributed));
  ms.steal = msOf(end.steal - start.steal);
  ms.total = msOf(end.machineBusy - start.machineBusy);
  return { windowMs: end.at - start.at, ms };
}

/** The same usage as percent of one core over its window, as `top` shows it. */
export function percentOfCore(usage: CpuUsage): CpuShare {
  return Object.fromEntries(Object.entries(usage.ms).map(([label, value]) => [label, (value / usage.windowMs) * 100]));
}

/** CPU ms per operation by group; undefined when nothing succeeded. */
export function msPerOperation(usage: CpuUsage, operations: number): Record<string, number> | undefined {
  if (operations <= 0) return undefined;
  return Object.fromEntries(Object.entries(usage.ms).map(([label, value]) => [label, value / operations]));
}
