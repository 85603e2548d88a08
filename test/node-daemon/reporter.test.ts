// The reporter: the status each planner fixture's observation yields (status.yaml beside plan.yaml), and
// the PoolExpansion and DiskReplacement conditions (docs/node-daemon.md) through executed actions. Status is
// a pure function: same input, same status.
import { expect } from "chai";
import { findCondition } from "../../lib/conditions.js";
import { plan } from "../../node-daemon/planner.js";
import { quantity, report, type ReportInput } from "../../node-daemon/reporter.js";
import { expectGolden, goldenCases } from "../support/golden.js";
import { planInputOf, plannerCase, replicaCountsOf } from "../support/planner-cases.js";

function reportFor(caseName: string, extra: Partial<ReportInput> = {}): ReturnType<typeof report> {
  const goldenCase = plannerCase(caseName);
  const input = planInputOf(goldenCase);
  return report({
    cspi: input.cspi,
    nodeName: input.nodeName,
    now: input.now,
    observation: input.observation,
    plan: plan(input),
    outcomes: [],
    ...extra,
  });
}

describe("node-daemon reporter", () => {
  for (const goldenCase of goldenCases("node-daemon/planner")) {
    it(`status for ${goldenCase.name}`, () => {
      const input = planInputOf(goldenCase);
      const counts = replicaCountsOf(goldenCase);
      const reportInput = {
        cspi: input.cspi,
        nodeName: input.nodeName,
        now: input.now,
        observation: input.observation,
        plan: plan(input),
        outcomes: [],
        ...(counts ? { replicas: counts } : {}),
      };
      const status = report(reportInput);
      expectGolden(goldenCase, "status.yaml", status);
      expect(report(reportInput)).to.deep.equal(status);
    });
  }

  it("keeps condition transition times when nothing changed (no churn)", () => {
    const first = reportFor("replacement-resilvering-openzfs");
    const goldenCase = plannerCase("replacement-resilvering-openzfs");
    const input = planInputOf(goldenCase);
    const later = new Date(input.now.getTime() + 30_000);
    const second = report({
      cspi: { ...input.cspi, status: first },
      nodeName: input.nodeName,
      now: later,
      observation: input.observation,
      plan: plan(input),
      outcomes: [],
    });
    expect({ ...second, lastUpdateTime: undefined }).to.deep.equal({ ...first, lastUpdateTime: undefined });
    expect(second.lastUpdateTime).to.equal("2026-03-01T12:00:30Z");
  });

  it("agrees with cspi-sync on the phase: an ONLINE pool whose pool pod is not available is PodUnavailable, and ONLINE again once it is", () => {
    const goldenCase = plannerCase("replacement-resilvering-openzfs");
    const input = planInputOf(goldenCase);
    const online = report({
      cspi: input.cspi,
      nodeName: input.nodeName,
      now: input.now,
      observation: input.observation,
      plan: plan(input),
      outcomes: [],
    });
    const podDown = {
      type: "PodAvailable",
      status: "False" as const,
      reason: "PoolPodNotReady",
      message: "no pod",
      lastTransitionTime: "2026-03-01T12:00:00Z",
    };
    const withPodDown = {
      ...input.cspi,
      status: {
        ...online,
        phase: "PodUnavailable" as const,
        conditions: [...(online.conditions ?? []), podDown],
      },
    };
    const later = new Date(input.now.getTime() + 60_000);
    const down = report({
      cspi: withPodDown,
      nodeName: input.nodeName,
      now: later,
      observation: input.observation,
      plan: plan(input),
      outcomes: [],
    });
    expect(online.phase).to.be.oneOf(["ONLINE", "DEGRADED"]);
    expect(down.phase).to.equal("PodUnavailable");
    // The hook wrote this phase: the daemon keeps its time, so the two never rewrite each other.
    expect(down.phaseLastTransitionTime).to.equal(withPodDown.status.phaseLastTransitionTime);
    const podBack = { ...podDown, status: "True" as const, reason: "PoolPodAvailable" };
    const back = report({
      cspi: { ...withPodDown, status: { ...down, conditions: [...(online.conditions ?? []), podBack] } },
      nodeName: input.nodeName,
      now: later,
      observation: input.observation,
      plan: plan(input),
      outcomes: [],
    });
    expect(back.phase).to.equal(online.phase);
    expect(back.phaseLastTransitionTime).to.equal("2026-03-01T12:01:00Z");
  });

  it("says why a removed pool is kept (PoolDestroyBlocked, for the CSPC to show), and says so no longer once nothing holds it", () => {
    const refused = reportFor("delete-marked-refused-with-volumes");
    expect(findCondition(refused.conditions, "PoolDestroyBlocked")).to.deep.include({
      status: "True",
      reason: "DestroyRefused",
    });
    const input = planInputOf(plannerCase("delete-marked-refused-with-volumes"));
    const released = report({
      cspi: { ...input.cspi, status: refused },
      nodeName: input.nodeName,
      now: input.now,
      observation: input.observation,
      plan: { actions: [], holds: [], statusOwner: true },
      outcomes: [],
    });
    expect(findCondition(released.conditions, "PoolDestroyBlocked")).to.deep.include({
      status: "False",
      reason: "NothingHeld",
    });
    expect(findCondition(reportFor("delete-marked-destroys").conditions, "PoolDestroyBlocked")).to.equal(
      undefined,
    );
  });

  it("reports a completed expansion with the documented reason and the devices added", () => {
    const goldenCase = plannerCase("expand-raid-group");
    const input = planInputOf(goldenCase);
    const [add] = plan(input).actions;
    const status = report({
      cspi: input.cspi,
      nodeName: "node-a",
      now: input.now,
      observation: input.observation,
      plan: { actions: [], holds: [], statusOwner: true },
      outcomes: [{ action: add }],
    });
    expect(findCondition(status.conditions, "PoolExpansion")).to.deep.include({
      status: "False",
      reason: "PoolExpansionSuccessful",
    });
    const failed = report({
      cspi: input.cspi,
      nodeName: "node-a",
      now: input.now,
      observation: input.observation,
      plan: plan(input),
      outcomes: [{ action: add, error: "mismatched replication level" }],
    });
    const condition = findCondition(failed.conditions, "PoolExpansion")!;
    expect(condition).to.deep.include({ status: "True", reason: "PoolExpansionInProgress" });
    expect(condition.message).to.contain("bd-disk2").and.contain("mismatched replication level");
  });

  it("an observation that failed (e.g. unreadable zpool status) settles nothing: a replacement or expansion in progress stays so, the pool stays imported here, phase Error", () => {
    for (const [caseName, type] of [
      ["expand-raid-group", "PoolExpansion"],
      ["replacement-resilvering-openzfs", "DiskReplacement"],
    ] as const) {
      const goldenCase = plannerCase(caseName);
      const input = planInputOf(goldenCase);
      const busy = report({
        cspi: input.cspi,
        nodeName: input.nodeName,
        now: input.now,
        observation: input.observation,
        plan: plan(input),
        outcomes: [],
      });
      expect(findCondition(busy.conditions, type), caseName).to.deep.include({ status: "True" });
      const unread = report({
        cspi: { ...input.cspi, status: busy },
        nodeName: input.nodeName,
        now: new Date(input.now.getTime() + 30_000),
        observationError:
          'unreadable zpool status output: pool cstor-pool-a1b2c3 ends before its vdev tree (no config: section) (line 1: "  pool: cstor-pool-a1b2c3")',
        plan: { actions: [], holds: [], statusOwner: true },
        outcomes: [],
      });
      expect(unread.phase).to.equal("Error");
      expect(unread.conditions, caseName).to.deep.equal(busy.conditions);
      // Whoever reads the pool's data (a target, `describe pool`) still finds it on this node.
      expect(unread.importedOn, caseName).to.equal(busy.importedOn).and.to.equal(input.nodeName);
    }
  });

  it("reports what the replicas' snapshots alone hold as part of used, once the pool's zfs get has said it", () => {
    const input = planInputOf(plannerCase("steady-state"));
    const withSnapshots = (bytes: number | undefined) => {
      const observation = structuredClone(input.observation);
      if (bytes !== undefined) observation.pool!.snapshotBytes = bytes;
      return reportFor("steady-state", { observation }).capacity;
    };
    expect(withSnapshots(3 * 2 ** 20)).to.deep.equal({
      total: "91Mi",
      free: "90.7Mi",
      used: "352Ki",
      snapshots: "3Mi",
    });
    expect(withSnapshots(0)).to.have.property("snapshots", "0");
    expect(withSnapshots(undefined), "not read: left out, not 0").to.not.have.property("snapshots");
  });

  it("formats capacity as Kubernetes quantities", () => {
    expect([
      quantity(0),
      quantity(1023),
      quantity(95059968),
      quantity(128 * 2 ** 20),
      quantity(1.5 * 2 ** 40),
      quantity(100 * 2 ** 20),
    ]).to.deep.equal(["0", "1023", "90.7Mi", "128Mi", "1.5Ti", "100Mi"]);
  });
});
