// The requests the benchmarks send: Metacontroller's cspc-sync request for a fleet of N pools (the shared
// deterministic generator), and the cspi-sync request of a steady-state golden case.
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import type { CompositeSyncRequest } from "../api/types.js";
import { fleetRequest } from "../test/support/fleet.js";

const FIXTURES = new URL("../test/fixtures/", import.meta.url).pathname;

/** A steady-state CSPI: fresh node daemon status, pool pod available, the Deployment already as desired. */
export const CSPI_SYNC_CASE = "cspi-sync/node-daemon-fresh-carried-through";

function fixture(path: string): unknown {
  return parse(readFileSync(`${FIXTURES}${path}`, "utf8"));
}

/**
 * The hook server's clock in the benchmarks: the golden case's "now". The fleet's objects carry the same
 * instant, so both requests hit the steady-state path (fresh heartbeats, unchanged conditions).
 */
export const BENCH_NOW = new Date((fixture(`${CSPI_SYNC_CASE}/case.yaml`) as { now: string }).now);
export const benchClock = (): Date => new Date(BENCH_NOW);

export type FleetState = "steady" | "first-sync";

/**
 * A cspc-sync request for a CSPC of `pools` pools (4 devices each, claims Bound). "steady": with the CSPIs a
 * previous sync created, ONLINE (every resync of a healthy fleet); "first-sync": no CSPIs yet.
 */
export function cspcSyncRequest(pools: number, state: FleetState = "steady"): CompositeSyncRequest {
  return fleetRequest({ pools, withCspis: state === "steady" });
}

export function cspiSyncRequest(): unknown {
  return fixture(`${CSPI_SYNC_CASE}/request.yaml`);
}
