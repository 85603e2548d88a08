// Counters read from a process's /metrics (the Prometheus text format), summed by some of their labels, so a
// benchmark can say what a server did between two readings: the hook server's answers per hook, the
// apiserver's requests per verb and resource and the watch events it sent per kind.

/** Each series of `metric` summed over the labels not named in `by`; the key is the named labels' values joined by " ". */
export function sumsBy(text: string, metric: string, by: string[]): Map<string, number> {
  const sums = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${metric}{`)) continue;
    const close = line.lastIndexOf("}");
    const labels = new Map(
      [...line.slice(metric.length + 1, close).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [
        m[1],
        m[2],
      ]),
    );
    const key = by.map((label) => labels.get(label) ?? "").join(" ");
    sums.set(
      key,
      (sums.get(key) ?? 0) +
        Number(
          line
            .slice(close + 1)
            .trim()
            .split(" ")[0],
        ),
    );
  }
  return sums;
}

/** What grew between two readings of the same counters, keys that did not grow left out. */
export function growth(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  const grown = new Map<string, number>();
  for (const [key, value] of after) {
    const delta = value - (before.get(key) ?? 0);
    if (delta > 0) grown.set(key, delta);
  }
  return grown;
}
