// The shipped alerts (metacontroller/components/monitoring/alerts.yaml) under promtool: valid rules, every
// alert firing and not firing in its unit tests (test/fixtures/monitoring/alert-tests.yaml), and no alert
// watching a metric the code does not export.
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
} from "../support/monitoring.js";

interface AlertCase {
  alertname: string;
  exp_alerts: unknown[];
}

const cases = () =>
  parse(readFileSync(fixturePath("monitoring/alert-tests.yaml"), "utf8")) as {
    tests: { alert_rule_test: AlertCase[] }[];
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

  it("watch only metrics the daemon or the hook server export (and Prometheus' own up)", () => {
    const exported = exportedMetricNames();
    exported.add("up");
    for (const { alert, expr } of shippedRules().alerts) {
      const names = metricsIn(expr);
      expect(names.length, `${alert} names a metric`).to.be.greaterThan(0);
      for (const name of names)
        expect(exported.has(name), `${alert} watches ${name}, which nothing exports`).to.equal(true);
    }
  });
});
