// The shipped alerts (metacontroller/components/monitoring/alerts.yaml) under promtool: valid rules, every
// alert firing and not firing in its unit tests (test/fixtures/monitoring/alert-tests.yaml), the volume alerts
// checked against each other, and no alert watching a metric the code does not export or a state it never sets.
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { fixturePath } from "../../testkit/kube.js";
import {
  checkRules,
  exportedMetricNames,
  metricsIn,
  shippedRules,
  testRules,
  unknownTargetStates,
} from "../support/monitoring.js";

interface AlertCase {
  eval_time: string;
  alertname: string;
  exp_alerts: unknown[];
}

const cases = () =>
  parse(readFileSync(fixturePath("monitoring/alert-tests.yaml"), "utf8")) as {
    tests: { name: string; alert_rule_test: AlertCase[] }[];
  };

describe("alerts (PrometheusRule) under promtool", function () {
  this.timeout(60_000);

  it("are valid Prometheus rules (promtool check rules)", async () => {
    const result = await checkRules(shippedRules().file);
    expect(result.code, result.output).to.equal(0);
    expect(result.output).to.contain(`SUCCESS: ${shippedRules().alerts.length} rules found`);
  });

  it("pass their unit tests (promtool test rules), and a wrong expectation fails them", async () => {
    const passing = await testRules(cases());
    expect(passing.code, passing.output).to.equal(0);
    const wrong = cases();
    const firing = wrong.tests.flatMap((t) => t.alert_rule_test).find((c) => c.exp_alerts.length > 0)!;
    firing.exp_alerts = [];
    const failing = await testRules(wrong);
    expect(failing.code).to.not.equal(0);
    expect(failing.output).to.contain(firing.alertname);
  });

  it("each alert has a case where it fires and one where it does not", () => {
    const checks = cases().tests.flatMap((t) => t.alert_rule_test);
    for (const { alert } of shippedRules().alerts) {
      expect(
        checks.some((c) => c.alertname === alert && c.exp_alerts.length > 0),
        `${alert} fires somewhere`,
      ).to.equal(true);
      expect(
        checks.some((c) => c.alertname === alert && c.exp_alerts.length === 0),
        `${alert} stays quiet somewhere`,
      ).to.equal(true);
    }
  });

  it("give one volume's trouble one alert: each case where a volume alert fires says what every other one does then", () => {
    // promtool checks what a case expects; this checks that the cases expect enough to show two volume alerts
    // never fire together for one cause (both firing is then an expectation, written and explained).
    const volumeAlerts = shippedRules()
      .alerts.map((a) => a.alert)
      .filter((a) => a.startsWith("CStorVolume"));
    expect(volumeAlerts.length).to.be.greaterThan(1);
    for (const { name, alert_rule_test: checks } of cases().tests) {
      const firing = new Set(
        checks
          .filter((c) => volumeAlerts.includes(c.alertname) && c.exp_alerts.length > 0)
          .map((c) => c.alertname),
      );
      for (const alert of firing) {
        const stated = checks
          .filter((c) => c.alertname === alert && c.exp_alerts.length > 0)
          .map((c) => new Set(checks.filter((o) => o.eval_time === c.eval_time).map((o) => o.alertname)));
        expect(
          stated.some((said) => volumeAlerts.every((a) => said.has(a))),
          `"${name}": at a time ${alert} fires, say what ${volumeAlerts.join(", ")} do`,
        ).to.equal(true);
      }
    }
  });

  it("watch only metrics the daemon, the pool agent, the volume target or the hook server export (and Prometheus' own up)", () => {
    const exported = exportedMetricNames();
    exported.add("up");
    for (const { alert, expr } of shippedRules().alerts) {
      const names = metricsIn(expr);
      expect(names.length, `${alert} names a metric`).to.be.greaterThan(0);
      for (const name of names)
        expect(exported.has(name), `${alert} watches ${name}, which nothing exports`).to.equal(true);
    }
  });

  it("select only states the volume target sets (a misspelt state would never fire)", () => {
    const problems = shippedRules().alerts.flatMap(({ alert, expr }) =>
      unknownTargetStates(expr).map((p) => `${alert}: ${p}`),
    );
    expect(problems).to.deep.equal([]);
    expect(unknownTargetStates('cstor_volume_target_state{state=~"Serving|Readonly"} == 1')).to.deep.equal([
      'cstor_volume_target_state has no state "Readonly" (Starting, Serving, ReadOnly, Refused, Stopped)',
    ]);
    expect(unknownTargetStates('cstor_volume_target_replicas{volume="v",state!="Serving"}')).to.deep.equal([
      'cstor_volume_target_replicas has no state "Serving" (InSync, Rebuilding, Degraded, Offline)',
    ]);
  });
});
