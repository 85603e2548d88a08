// The requests the benchmarks send: Metacontroller's cspc-sync request for a fleet of N pools (the shared
// deterministic generator), and the cspi-sync request of a steady-state golden case.
import { join } from "node:path";
import { LABEL, TYPE_KEY } from "../api/constants.js";
import type { BlockPoolSpec, CompositeSyncRequest, KubeObject } from "../api/types.js";
import { quietHookContext } from "../testkit/hook-context.js";
import { handleCspcSync } from "../hooks/cspc-sync/sync.js";
import { FIXTURES, readCaseDocument, readYaml } from "../testkit/case-documents.js";
import { fleetRequest } from "../testkit/fleet.js";

/** A steady-state CSPI: fresh node daemon status, pool pod available, the Deployment already as desired. */
export const CSPI_SYNC_CASE = "cspi-sync/node-daemon-fresh-carried-through";
const CSPI_SYNC_DIR = join(FIXTURES, CSPI_SYNC_CASE);

/**
 * The hook server's clock in the benchmarks: the golden case's "now". The fleet's objects carry the same
 * instant, so both requests hit the steady-state path (fresh heartbeats, unchanged conditions).
 */
export const BENCH_NOW = new Date((readYaml(join(CSPI_SYNC_DIR, "case.yaml")) as { now: string }).now);
export const benchClock = (): Date => new Date(BENCH_NOW);

export type FleetState = "steady" | "first-sync";

/**
 * A cspc-sync request for a CSPC of `pools` pools (4 devices each, claims Bound). "steady": with the CSPIs a
 * previous sync created, ONLINE (every resync of a healthy fleet); "first-sync": no CSPIs yet.
 */
export function cspcSyncRequest(pools: number, state: FleetState = "steady"): CompositeSyncRequest {
  return fleetRequest({ pools, withCspis: state === "steady" });
}

/**
 * Edits of a whole steady fleet at once, the paths where matching pools, devices and children could go
 * quadratic. "expansion": every pool gets a third mirror group of two new devices; "replacement": every pool
 * swaps one device for a new one (the health gate lets one start, the rest wait). New devices are on the
 * pool's node and their claims are Bound, so the sync acts on every pool. "selector-typo": the seed's
 * kubernetes.io/hostName in every pool of a new fleet, so every pool selects no node.
 */
export type FleetEdit = "expansion" | "replacement" | "selector-typo";

export function editedFleetRequest(pools: number, edit: FleetEdit): CompositeSyncRequest {
  if (edit === "selector-typo") {
    const request = fleetRequest({ pools });
    for (const pool of (request.parent as unknown as { spec: { pools: BlockPoolSpec[] } }).spec.pools) {
      pool.nodeSelector = { "kubernetes.io/hostName": pool.nodeSelector[LABEL.hostname] };
    }
    return request;
  }
  const request = fleetRequest({ pools, withCspis: true });
  const blockDevices = request.related[TYPE_KEY.blockDevice];
  const newDevice = (like: string, name: string): string => {
    const original = Object.values(blockDevices).find((bd) => bd.metadata.name === like)!;
    const copy = structuredClone(original) as KubeObject & { spec: { claimRef: { name: string } } };
    copy.metadata.name = name;
    copy.spec.claimRef.name = `bdc-${name}`;
    blockDevices[`${copy.metadata.namespace}/${name}`] = copy;
    return name;
  };
  for (const pool of (request.parent as unknown as { spec: { pools: BlockPoolSpec[] } }).spec.pools) {
    const [first, second] = pool.raidGroups;
    const device = first.blockDevices[0].blockDeviceName;
    if (edit === "expansion") {
      const added = [newDevice(device, `${device}-x1`), newDevice(device, `${device}-x2`)];
      pool.raidGroups = [
        first,
        second,
        { type: "mirror", blockDevices: added.map((blockDeviceName) => ({ blockDeviceName })) },
      ];
    } else {
      first.blockDevices[0] = { blockDeviceName: newDevice(device, `${device}-r`) };
    }
  }
  // The claims this edit asks for, Bound as NDM leaves them.
  const claims = { ...request.children[TYPE_KEY.blockDeviceClaim] };
  for (const child of handleCspcSync(request, quietHookContext(benchClock)).children) {
    const key = `${child.metadata.namespace}/${child.metadata.name}`;
    if (child.kind === "BlockDeviceClaim" && !claims[key])
      claims[key] = { ...child, status: { phase: "Bound" } };
  }
  return {
    ...request,
    children: { ...request.children, [TYPE_KEY.blockDeviceClaim]: claims },
    related: { ...request.related, [TYPE_KEY.blockDeviceClaim]: claims },
  };
}

export function cspiSyncRequest(): unknown {
  return readCaseDocument(CSPI_SYNC_DIR, "request.yaml");
}
