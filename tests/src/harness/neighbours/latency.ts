/** Latency figures of one side of a neighbours comparison, in milliseconds. */
export interface LatencyFigures {
  samples: number;
  p50: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentile: with fewer than 100 samples, p99 is the slowest one. */
export function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) throw new Error('no samples');
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

export function latencyFigures(samples: readonly number[]): LatencyFigures {
  const sorted = [...samples].sort((a, b) => a - b);
  return { samples: sorted.length, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted[sorted.length - 1]! };
}

/**
 * The bound a victim's p99 under attack must keep: twice its quiet p99, and never more than a
 * second. A quiet p99 of a few milliseconds doubles within the scheduler noise of a busy two-core
 * machine, so the doubled figure is never taken below `floorMs` (the tests say which floor they use).
 */
export function neighbourBound(quiet: LatencyFigures, floorMs: number): number {
  return Math.min(1_000, Math.max(2 * quiet.p99, floorMs));
}

/** Runs `measure` `count` times one after another and answers the figures. */
export async function sequentialLatencies(count: number, measure: (index: number) => Promise<number>): Promise<LatencyFigures> {
  const samples: number[] = [];
  for (let index = 0; index < count; index++) samples.push(await measure(index));
  return latencyFigures(samples);
}

export const describeFigures = (figures: LatencyFigures) =>
  `p50 ${figures.p50.toFixed(1)} ms, p99 ${figures.p99.toFixed(1)} ms, max ${figures.max.toFixed(1)} ms over ${figures.samples} samples`;
