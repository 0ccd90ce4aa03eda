import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';

/**
 * Where the CPU went during a scenario, from /proc (Linux only): ticks per process between two
 * snapshots. Our own processes are named by pid, PostgreSQL and RabbitMQ by command name, and
 * whatever is left of the machine's busy time is "other" (kernel networking, anyone else's tests).
 */
export type CpuShare = Record<string, number>;

interface Snapshot {
  at: number;
  machineBusy: number;
  /** Time the virtual CPUs were ready but the host ran someone else: a noisy neighbour. */
  steal: number;
  perPid: Map<number, { comm: string; ticks: number }>;
}

const available = existsSync('/proc/stat');
const ticksPerSecond = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

const COMMAND_GROUPS: Record<string, string> = { postgres: 'postgres', 'beam.smp': 'rabbitmq' };

function machineTicks(): { busy: number; steal: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: all but idle, iowait and steal is work done here
  const busy = fields.slice(0, 7).reduce((sum, value, index) => (index === 3 || index === 4 ? sum : sum + value), 0);
  return { busy, steal: fields[7] ?? 0 };
}

function processTicks(): Map<number, { comm: string; ticks: number }> {
  const result = new Map<number, { comm: string; ticks: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const rest = stat.slice(close + 2).split(' ');
      // fields 14 and 15 of stat (utime, stime); `rest` starts at field 3
      result.set(Number(entry), { comm, ticks: Number(rest[11]) + Number(rest[12]) });
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

/** Percent of one core per group (a 2-core machine tops out at 200 in total, steal included). */
export function cpuShare(start: Snapshot | undefined, end: Snapshot | undefined, named: Record<string, number>): CpuShare | undefined {
  if (!start || !end) return undefined;
  const seconds = (end.at - start.at) / 1000;
  const percent = (ticks: number) => (ticks / ticksPerSecond / seconds) * 100;
  const labelOfPid = new Map(Object.entries(named).map(([label, pid]) => [pid, label]));
  const ticks: Record<string, number> = {};
  for (const label of [...Object.keys(named), ...Object.values(COMMAND_GROUPS)]) ticks[label] = 0;
  let attributed = 0;
  for (const [pid, after] of end.perPid) {
    const label = labelOfPid.get(pid) ?? COMMAND_GROUPS[after.comm];
    if (!label) continue;
    const used = after.ticks - (start.perPid.get(pid)?.ticks ?? 0);
    ticks[label] = (ticks[label] ?? 0) + used;
    attributed += used;
  }
  const share: CpuShare = {};
  for (const [label, value] of Object.entries(ticks)) share[label] = percent(value);
  share.other = Math.max(0, percent(end.machineBusy - start.machineBusy - attributed));
  share.steal = percent(end.steal - start.steal);
  share.total = percent(end.machineBusy - start.machineBusy);
  return share;
}
