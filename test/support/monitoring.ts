// What the monitoring tests share: the metric names the code registers (the daemon's and the hook server's
// registries, histograms with their _bucket/_sum/_count series), the alerts as a Prometheus rules file taken
// from the shipped PrometheusRule, and promtool (Debian's prometheus package, installed by scripts/test-env.sh).
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Histogram, Registry } from "prom-client";
import { stringify, parse } from "yaml";
import { makeApp } from "../../hooks/http/app.js";
import { createLogger } from "../../lib/log.js";
import { createMetrics } from "../../node-daemon/metrics.js";
import { repoPath } from "./kube.js";

export const ALERTS_FILE = "metacontroller/components/monitoring/alerts.yaml";

/** Every series name the daemon and the hook server can export. */
export function exportedMetricNames(): Set<string> {
  const hookRegistry = new Registry();
  makeApp({ routes: [], clock: () => new Date(), log: createLogger({ level: "silent" }), registry: hookRegistry });
  const names = new Set<string>();
  for (const registry of [createMetrics().registry, hookRegistry]) {
    for (const metric of registry.getMetricsAsArray()) {
      const name = (metric as unknown as { name: string }).name;
      names.add(name);
      if (metric instanceof Histogram) for (const suffix of ["_bucket", "_sum", "_count"]) names.add(`${name}${suffix}`);
    }
  }
  return names;
}

/** Metric names a PromQL expression selects: identifiers not followed by "(" that are not keywords or label names. */
export function metricsIn(expr: string): string[] {
  const withoutStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/\{[^}]*\}/g, "{}").replace(/\[[^\]]*\]/g, "[]");
  const without = withoutStrings.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, "");
  const names = [...without.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)].map((m) => m[1]);
  return [...new Set(names.filter((n) => !PROMQL_WORDS.has(n) && !/^\d/.test(n)))];
}

const PROMQL_WORDS = new Set(["and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan", "e"]);

export interface AlertRule {
  alert: string;
  expr: string;
}

/** The PrometheusRule's groups as a Prometheus rules file, and its alerts. */
export function shippedRules(): { file: string; alerts: AlertRule[] } {
  const rule = parse(readFileSync(repoPath(ALERTS_FILE), "utf8")) as { spec: { groups: { rules: AlertRule[] }[] } };
  return { file: stringify({ groups: rule.spec.groups }), alerts: rule.spec.groups.flatMap((g) => g.rules) };
}

export function promtool(args: readonly string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile("promtool", args, { cwd, encoding: "utf8", maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

/** `promtool test rules` on the shipped alerts with these test cases (promtool's format, rule_files filled in). */
export async function testRules(cases: Record<string, unknown>): Promise<{ code: number; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), "cstor-rules-"));
  try {
    writeFileSync(join(dir, "rules.yaml"), shippedRules().file);
    writeFileSync(join(dir, "tests.yaml"), stringify({ ...cases, rule_files: ["rules.yaml"] }));
    return await promtool(["test", "rules", "tests.yaml"], dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
