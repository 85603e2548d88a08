// Planner golden cases: test/fixtures/node-daemon/planner/<case>/ holds the CSPI, the node's real zpool
// output (zpool-status.txt, zpool-import-*.txt, captured from zfs-fuse or OpenZFS), device facts, and the
// expected plan. The outputs go through the same parsers the daemon uses.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import type { CSPI } from "../../api/types.js";
import { zpoolName } from "../../lib/names.js";
import type { DeviceInfo, ImportSource, Observation, PoolObservation } from "../../node-daemon/observation.js";
import { parseImportList, parseSize, parseZpoolStatus } from "../../node-daemon/parse.js";
import { plan, type PlanInput } from "../../node-daemon/planner.js";
import { expectGolden, goldenCases, type GoldenCase } from "../support/golden.js";

/** The fixtures' devices are sparse files under /var/openebs/sparse, as on a node whose DEVICE_ROOTS lists it. */
export const FIXTURE_DEVICE_ROOTS: readonly string[] = ["/dev/", "/var/openebs/sparse/"];

interface FixtureInput {
  nodeName: string;
  hostName?: string;
  manageFinalizer: boolean;
  cspi: CSPI;
  zpoolStatus: string;
  importable?: { source: ImportSource; listing: string }[];
  pool?: Omit<PoolObservation, "status" | "size"> & { size?: string };
  devices: Record<string, DeviceInfo>;
  claims?: Record<string, Record<string, string>>;
}

/** The planner's input for a fixture: the same parsing of zpool output as on a node. */
export function planInputOf(goldenCase: GoldenCase): PlanInput {
  const input = goldenCase.read("input.yaml") as FixtureInput;
  const text = (file: string) => readFileSync(join(goldenCase.dir, file), "utf8");
  const imported = parseZpoolStatus(text(input.zpoolStatus));
  const ours = imported.find((p) => p.name === zpoolName(input.cspi.metadata.name ?? ""));
  const observation: Observation = {
    imported,
    importable: (input.importable ?? []).flatMap((entry) => parseImportList(text(entry.listing)).map((pool) => ({ pool, source: entry.source }))),
    devices: input.devices,
  };
  if (ours) {
    if (!input.pool) throw new Error(`${goldenCase.name}: the pool is imported, so input.yaml needs pool: details`);
    const { size, ...details } = input.pool;
    const parsedSize = size === undefined ? undefined : parseSize(size);
    observation.pool = { status: ours, ...details, ...(parsedSize !== undefined ? { size: parsedSize } : {}) };
  }
  if (input.claims) observation.claims = input.claims;
  return {
    cspi: input.cspi,
    nodeName: input.nodeName,
    hostName: input.hostName ?? input.nodeName,
    now: goldenCase.now,
    observation,
    manageFinalizer: input.manageFinalizer,
    deviceRoots: FIXTURE_DEVICE_ROOTS,
  };
}

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
    expect(plan({ ...planInputOf(waiting), staleStatusSeconds: 20 }).holds.map((h) => h.reason)).to.deep.equal(["ImportBlocked"]);
  });
});
