// Planner golden cases: test/fixtures/node-daemon/planner/<case>/ holds the CSPI, the node's real zpool
// output (zpool-status.txt, zpool-import-*.txt, captured from zfs-fuse or OpenZFS), device facts, and the
// expected plan. The outputs go through the same parsers the daemon uses.
import { expect } from "chai";
import { plan } from "../../node-daemon/planner.js";
import { expectGolden, goldenCases } from "../support/golden.js";
import { planInputOf } from "../support/planner-cases.js";

describe("node-daemon planner (golden)", () => {
  for (const goldenCase of goldenCases("node-daemon/planner")) {
    it(`${goldenCase.name}: ${goldenCase.description}`, () => {
      const input = planInputOf(goldenCase);
      const first = plan(input);
      expectGolden(goldenCase, "plan.yaml", first);
      // Pure: the same input gives the same plan.
      expect(plan(planInputOf(goldenCase))).to.deep.equal(first);
    });
  }

  it("waits for the holder's export only while its heartbeat is younger than the stale-heartbeat setting the hooks share", () => {
    const waiting = goldenCases("node-daemon/planner").find((c) => c.name === "import-waits-for-holder")!;
    expect(plan(planInputOf(waiting)).holds.map((h) => h.reason)).to.deep.equal(["WaitingForExport"]);
    // The holder's heartbeat in that case is 30 s old: past a 20 s setting it counts as stale.
    expect(
      plan({ ...planInputOf(waiting), staleStatusSeconds: 20 }).holds.map((h) => h.reason),
    ).to.deep.equal(["ImportBlocked"]);
  });

  it("counts the holder alive while its node's Lease is renewed, however old the status it last wrote", () => {
    const stale = planInputOf(
      goldenCases("node-daemon/planner").find((c) => c.name === "import-blocked-stale-holder")!,
    );
    const renewed = (ago: number) => ({
      ...stale,
      observation: {
        ...stale.observation,
        holderRenewedAt: new Date(stale.now.getTime() - ago * 1000).toISOString(),
      },
    });
    expect(plan(renewed(60)).holds.map((h) => h.reason)).to.deep.equal(["WaitingForExport"]);
    const blocked = plan(renewed(400)).holds;
    expect(blocked.map((h) => h.reason)).to.deep.equal(["ImportBlocked"]);
    expect(blocked[0].message).to.contain(`stale since ${renewed(400).observation.holderRenewedAt}`);
  });
});
