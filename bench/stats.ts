// Small statistics for the benchmarks: percentiles of latency samples, a timing loop for pure functions,
// and the growth check (how time grows when the input doubles).

export interface Summary {
  count: number;
  p50: number;
  p99: number;
}

/** Nearest-rank percentile of ascending samples. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  return { count: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

export interface TimingBudget {
  /** Measure for at least this long (after a warm-up of a quarter of it, and at least 2 calls)... */
  millis: number;
  /** ...and at least this many calls. */
  minCalls: number;
}

/**
 * Runs `step` repeatedly and returns its samples. `step` times its own phases and returns them, so one loop
 * can measure a pipeline (parse → hook → serialise) phase by phase on the same inputs.
 */
export function sampleSteps<T extends Record<string, number>>(step: () => T, budget: TimingBudget): T[] {
  const warmUntil = performance.now() + budget.millis / 4;
  for (let i = 0; i < 2 || performance.now() < warmUntil; i++) step();
  const samples: T[] = [];
  const until = performance.now() + budget.millis;
  while (samples.length < budget.minCalls || performance.now() < until) samples.push(step());
  return samples;
}

/** Milliseconds spent in `fn`, and its result. */
export function timed<R>(fn: () => R): [R, number] {
  const start = process.hrtime.bigint();
  const result = fn();
  return [result, Number(process.hrtime.bigint() - start) / 1e6];
}

export function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

export interface Growth {
  /** Exponent b of a least-squares fit time ∝ size^b (1 = linear, 2 = quadratic). */
  exponent: number;
  /** Time factor per doubling of the size between consecutive sizes (2 = linear, 4 = quadratic). */
  perDoubling: { from: number; to: number; factor: number }[];
}

/** How time grows with size, over the sizes where fixed per-call costs no longer dominate. */
export function growth(points: readonly { size: number; millis: number }[]): Growth {
  const xs = points.map((p) => Math.log(p.size));
  const ys = points.map((p) => Math.log(p.millis));
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  let num = 0;
  let den = 0;
  xs.forEach((x, i) => {
    num += (x - mx) * (ys[i] - my);
    den += (x - mx) ** 2;
  });
  const perDoubling = points.slice(1).map((p, i) => {
    const prev = points[i];
    return {
      from: prev.size,
      to: p.size,
      factor: (p.millis / prev.millis) ** (1 / Math.log2(p.size / prev.size)),
    };
  });
  return { exponent: den === 0 ? Number.NaN : num / den, perDoubling };
}
