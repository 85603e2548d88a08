// The shipped Grafana dashboards (metacontroller/components/monitoring/dashboards/): all in the ConfigMap the
// sidecar loads, each with its own uid and title, and every query (panel targets and template variables) valid
// PromQL that selects only metrics the code exports and only states the volume target sets: a renamed metric or
// state must break this test, not a dashboard.
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { parse, stringify } from "yaml";
import { repoPath } from "../../testkit/kube.js";
import {
  checkRules,
  exportedMetricNames,
  metricsIn,
  shippedDashboards,
  unknownTargetStates,
} from "../support/monitoring.js";

type Dashboard = Record<string, any>;

interface Query {
  where: string;
  expr: string;
}

/** The PromQL a template variable runs: Grafana's label_values(selector, label) and query_result(expr) forms. */
function variableExpr(query: string): string {
  const labelValues = /^label_values\(\s*(.+),\s*[a-zA-Z_]\w*\s*\)$/s.exec(query.trim());
  if (labelValues) return labelValues[1];
  const result = /^query_result\((.+)\)$/s.exec(query.trim());
  if (result) return result[1];
  throw new Error(
    `"${query}" is not label_values(selector, label) or query_result(expr): write the variable in one of those forms`,
  );
}

/** Every PromQL expression of a dashboard, rows' nested panels included, with where it sits. */
function queriesOf(dashboard: Dashboard): Query[] {
  const queries: Query[] = [];
  const walk = (panels: Dashboard[]) => {
    for (const panel of panels) {
      for (const target of panel.targets ?? [])
        if (target.expr !== undefined)
          queries.push({ where: `panel "${panel.title}" query ${target.refId}`, expr: target.expr });
      walk(panel.panels ?? []);
    }
  };
  walk(dashboard.panels ?? []);
  for (const variable of dashboard.templating?.list ?? []) {
    if (variable.type !== "query") continue;
    const query: string = typeof variable.query === "string" ? variable.query : variable.query?.query;
    queries.push({ where: `variable ${variable.name}`, expr: variableExpr(query) });
  }
  return queries;
}

/**
 * Grafana's variables as plain PromQL: a range's ($__rate_interval in `[...]`) as a duration, any other ($cspi,
 * ${volume}) as a number.
 */
const withoutVariables = (expr: string) =>
  expr.replace(/\[\$(\{[^}]*\}|\w+)\]/g, "[5m]").replace(/\$(\{[^}]*\}|\w+)/g, "1");

/** What is wrong with a set of dashboards: repeated uids or titles, panels without queries, unexported metrics, unknown states. */
function dashboardProblems(dashboards: Map<string, Dashboard>, exported: Set<string>): string[] {
  const problems: string[] = [];
  for (const key of ["uid", "title"]) {
    const seen = new Map<string, string>();
    for (const [file, dashboard] of dashboards) {
      const value = dashboard[key];
      if (typeof value !== "string" || value === "") problems.push(`${file} has no ${key}`);
      else if (seen.has(value)) problems.push(`${file} has the ${key} "${value}" of ${seen.get(value)}`);
      else seen.set(value, file);
    }
  }
  for (const [file, dashboard] of dashboards) {
    for (const panel of dashboard.panels ?? [])
      if (panel.type !== "row" && !(panel.targets ?? []).some((t: { expr?: string }) => t.expr))
        problems.push(`${file}: panel "${panel.title}" has no query`);
    for (const { where, expr } of queriesOf(dashboard)) {
      const names = metricsIn(withoutVariables(expr));
      if (names.length === 0) problems.push(`${file}: ${where} names no metric: ${expr}`);
      for (const name of names)
        if (!exported.has(name)) problems.push(`${file}: ${where} queries ${name}, which nothing exports`);
      for (const problem of unknownTargetStates(expr)) problems.push(`${file}: ${where}: ${problem}`);
    }
  }
  return problems;
}

describe("Grafana dashboards", function () {
  this.timeout(60_000);
  const dashboards = shippedDashboards();

  it("are all in the ConfigMap the Grafana sidecar loads (label grafana_dashboard)", () => {
    const component = parse(
      readFileSync(repoPath("metacontroller/components/monitoring/kustomization.yaml"), "utf8"),
    );
    const [generator] = component.configMapGenerator;
    expect(generator.options.labels.grafana_dashboard).to.equal("1");
    expect(generator.files.map((f: string) => f.replace("dashboards/", ""))).to.deep.equal([
      ...dashboards.keys(),
    ]);
    expect([...dashboards.keys()]).to.deep.equal(["fleet-overview.json", "pool.json", "volume.json"]);
  });

  it("have unique uids and titles, and query only metrics the daemon, the pool agent, the volume target or the hook server export", () => {
    expect(dashboardProblems(dashboards, exportedMetricNames())).to.deep.equal([]);
    const queries = [...dashboards.values()].flatMap(queriesOf);
    expect(queries.filter((q) => q.where.startsWith("variable")).map((q) => q.expr)).to.deep.equal([
      "cstor_pool_phase",
      "cstor_volume_replica_healthy",
    ]);
  });

  it("fail the check when a panel or a variable queries a metric nobody exports or a state nobody sets, or two share a uid and a title", () => {
    const broken = new Map(dashboards);
    const pool: Dashboard = structuredClone(dashboards.get("pool.json")!);
    pool.panels[0].targets.push({ refId: "Z", expr: 'cstor_pool_health{cspi="$cspi"} > 0' });
    pool.templating.list.find((v: Dashboard) => v.name === "cspi").query.query =
      "label_values(cstor_pool_info, cspi)";
    broken.set("pool.json", pool);
    const volume: Dashboard = structuredClone(dashboards.get("volume.json")!);
    volume.panels.find((p: Dashboard) => p.title === "Target state").targets[0].expr =
      'cstor_volume_target_state{volume="$volume",state="Readonly"}';
    broken.set("volume.json", volume);
    broken.set("copy.json", dashboards.get("volume.json")!);
    expect(dashboardProblems(broken, exportedMetricNames())).to.deep.equal([
      'copy.json has the uid "cstor-volume" of volume.json',
      'copy.json has the title "cStor pools: one volume" of volume.json',
      'pool.json: panel "Phase" query Z queries cstor_pool_health, which nothing exports',
      "pool.json: variable cspi queries cstor_pool_info, which nothing exports",
      'volume.json: panel "Target state" query A: cstor_volume_target_state has no state "Readonly" (Starting, Serving, ReadOnly, Refused, Stopped)',
    ]);
  });

  it("are valid PromQL (promtool check rules, each query as a recording rule)", async () => {
    const rules = [...dashboards.values()]
      .flatMap(queriesOf)
      .map((q, i) => ({ record: `dashboard:query:${i}`, expr: withoutVariables(q.expr) }));
    const result = await checkRules(stringify({ groups: [{ name: "dashboards", rules }] }));
    expect(result.code, result.output).to.equal(0);
    expect(result.output).to.contain(`SUCCESS: ${rules.length} rules found`);
  });
});
