// What the monitoring tests share: the metric names the code registers (the daemon's, the pool agent's and the
// hook server's registries, histograms with their _bucket/_sum/_count series, and the volume target's series as
// docs/operations.md lists them), the alerts as a Prometheus rules
// file taken from the shipped PrometheusRule, the shipped Grafana dashboards, and promtool (Debian's prometheus
// package, installed by scripts/test-env.sh).
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Histogram, Registry } from "prom-client";
import { stringify, parse } from "yaml";
import { TARGET_REPLICA_STATES, TARGET_STATES } from "../../api/volume-schema.js";
import { makeApp } from "../../hooks/http/app.js";
import { createLogger } from "../../runtime/log.js";
import { createMetrics } from "../../node-daemon/metrics.js";
import { createAgentMetrics } from "../../pool-agent/metrics.js";
import { repoPath } from "../../testkit/kube.js";

export const ALERTS_FILE = "metacontroller/components/monitoring/alerts.yaml";
const DASHBOARDS_DIR = "metacontroller/components/monitoring/dashboards";

/**
 * The volume target agent's series (docs/operations.md#metrics-and-alerts), every one labelled volume and
 * namespace. Listed by name because the agent's registry is not in this tree yet; once it is, take the names
 * from it as for the others, so that a rename there breaks the alerts' and dashboards' tests.
 */
export const VOLUME_TARGET_METRICS = [
  "cstor_volume_target_state",
  "cstor_volume_target_replicas",
  "cstor_volume_target_consistency_factor",
  "cstor_volume_target_write_protected",
  "cstor_volume_target_rebuild_ratio",
  "cstor_volume_target_reads_total",
  "cstor_volume_target_writes_total",
  "cstor_volume_target_read_bytes_total",
  "cstor_volume_target_written_bytes_total",
  "cstor_volume_target_read_seconds_total",
  "cstor_volume_target_write_seconds_total",
] as const;

/** Every series name the daemon, the pool agent, the volume target and the hook server can export. */
export function exportedMetricNames(): Set<string> {
  const hookRegistry = new Registry();
  makeApp({
    routes: [],
    clock: () => new Date(),
    log: createLogger({ level: "silent" }),
    registry: hookRegistry,
  });
  const names = new Set<string>(VOLUME_TARGET_METRICS);
  for (const registry of [
    createMetrics().registry,
    createAgentMetrics("pool", "cspi").registry,
    hookRegistry,
  ]) {
    for (const metric of registry.getMetricsAsArray()) {
      const name = (metric as unknown as { name: string }).name;
      names.add(name);
      if (metric instanceof Histogram)
        for (const suffix of ["_bucket", "_sum", "_count"]) names.add(`${name}${suffix}`);
    }
  }
  return names;
}

/** The volume target's state sets and the states each takes (the CStorVolume's status.target says the same). */
const TARGET_STATE_SETS: Record<string, readonly string[]> = {
  cstor_volume_target_state: TARGET_STATES,
  cstor_volume_target_replicas: TARGET_REPLICA_STATES,
};

/** What is wrong with the state matchers of an expression's target state sets: a state the agent never sets. */
export function unknownTargetStates(expr: string): string[] {
  const problems: string[] = [];
  for (const [, metric, matchers] of expr.matchAll(/\b(cstor_volume_target_\w+)\s*\{([^}]*)\}/g)) {
    const states = TARGET_STATE_SETS[metric];
    if (!states) continue;
    for (const [, op, value] of matchers.matchAll(/\bstate\s*(=~|!~|!=|=)\s*"([^"]*)"/g))
      for (const state of op.includes("~") ? value.split("|") : [value])
        if (!states.includes(state))
          problems.push(`${metric} has no state "${state}" (${states.join(", ")})`);
  }
  return problems;
}

/** Metric names a PromQL expression selects: identifiers not followed by "(" that are not keywords or label names. */
export function metricsIn(expr: string): string[] {
  const withoutStrings = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, "{}")
    .replace(/\[[^\]]*\]/g, "[]");
  const without = withoutStrings.replace(
    /\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g,
    "",
  );
  const names = [...without.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)].map((m) => m[1]);
  return [...new Set(names.filter((n) => !PROMQL_WORDS.has(n) && !/^\d/.test(n)))];
}

const PROMQL_WORDS = new Set([
  "and",
  "or",
  "unless",
  "bool",
  "offset",
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "inf",
  "nan",
  "e",
]);

/** The Grafana dashboards in the repository, by file name (the ConfigMap's keys), parsed. */
export function shippedDashboards(): Map<string, Record<string, unknown>> {
  const files = readdirSync(repoPath(DASHBOARDS_DIR))
    .filter((f) => f.endsWith(".json"))
    .sort();
  return new Map(
    files.map((f) => [
      f,
      JSON.parse(readFileSync(repoPath(`${DASHBOARDS_DIR}/${f}`), "utf8")) as Record<string, unknown>,
    ]),
  );
}

export interface AlertRule {
  alert: string;
  expr: string;
}

/** The PrometheusRule's groups as a Prometheus rules file, and its alerts. */
export function shippedRules(): { file: string; alerts: AlertRule[] } {
  const rule = parse(readFileSync(repoPath(ALERTS_FILE), "utf8")) as {
    spec: { groups: { rules: AlertRule[] }[] };
  };
  return { file: stringify({ groups: rule.spec.groups }), alerts: rule.spec.groups.flatMap((g) => g.rules) };
}

function promtool(args: readonly string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      "promtool",
      args,
      { cwd, encoding: "utf8", maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

/** promtool run in a temporary directory holding these files (name to text). */
async function promtoolOn(
  files: Record<string, string>,
  args: readonly string[],
): Promise<{ code: number; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), "cstor-rules-"));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return await promtool(args, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `promtool check rules` on a Prometheus rules file's text. */
export function checkRules(file: string): Promise<{ code: number; output: string }> {
  return promtoolOn({ "rules.yaml": file }, ["check", "rules", "rules.yaml"]);
}

/** `promtool test rules` on the shipped alerts with these test cases (promtool's format, rule_files filled in). */
export function testRules(cases: Record<string, unknown>): Promise<{ code: number; output: string }> {
  return promtoolOn(
    { "rules.yaml": shippedRules().file, "tests.yaml": stringify({ ...cases, rule_files: ["rules.yaml"] }) },
    ["test", "rules", "tests.yaml"],
  );
}
