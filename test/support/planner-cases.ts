// The planner golden cases' input (test/fixtures/node-daemon/planner/<case>/input.yaml and the zpool output
// it names), turned into the planner's input the way a node does it: through the daemon's own parsers.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { CSPI } from "../../api/types.js";
import { zpoolName } from "../../lib/names.js";
import type { DeviceInfo, ImportSource, Observation, PoolObservation } from "../../zfs/observation.js";
import { parseImportList, parseSize, parseZpoolStatus } from "../../zfs/parse.js";
import type { PlanInput } from "../../node-daemon/planner.js";
import type { ReplicaCounts } from "../../node-daemon/reporter.js";
import { goldenCases, type GoldenCase } from "./golden.js";

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
  /** CStorVolumeReplicas naming the CSPI; absent: unknown (their watch not synced). */
  replicas?: string[];
  /** What the daemon counted of those replicas for the status; absent: unknown. */
  replicaCounts?: ReplicaCounts;
}

/** The replica counts a case gives the reporter (absent: unknown, left out of the status). */
export function replicaCountsOf(goldenCase: GoldenCase): ReplicaCounts | undefined {
  return (goldenCase.read("input.yaml") as FixtureInput).replicaCounts;
}

/** The planner's input for a fixture: the same parsing of zpool output as on a node. */
export function planInputOf(goldenCase: GoldenCase): PlanInput {
  const input = goldenCase.read("input.yaml") as FixtureInput;
  const text = (file: string) => readFileSync(join(goldenCase.dir, file), "utf8");
  const imported = parseZpoolStatus(text(input.zpoolStatus));
  const ours = imported.find((p) => p.name === zpoolName(input.cspi.metadata.name ?? ""));
  const observation: Observation = {
    imported,
    importable: (input.importable ?? []).flatMap((entry) =>
      parseImportList(text(entry.listing)).map((pool) => ({ pool, source: entry.source })),
    ),
    devices: input.devices,
  };
  if (ours) {
    if (!input.pool)
      throw new Error(`${goldenCase.name}: the pool is imported, so input.yaml needs pool: details`);
    const { size, ...details } = input.pool;
    const parsedSize = size === undefined ? undefined : parseSize(size);
    observation.pool = {
      status: ours,
      ...details,
      ...(parsedSize !== undefined ? { size: parsedSize } : {}),
    };
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
    ...(input.replicas ? { replicas: input.replicas } : {}),
  };
}

/** The planner case of this name. */
export function plannerCase(name: string): GoldenCase {
  const found = goldenCases("node-daemon/planner").find((c) => c.name === name);
  if (!found) throw new Error(`no planner case ${name} under test/fixtures/node-daemon/planner`);
  return found;
}
