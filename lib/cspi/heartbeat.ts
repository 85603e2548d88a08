// A node daemon's last sign of life (docs/adr/0045-*), as cspi-sync reads it and as another node's import
// handshake does (node-daemon/planner.ts): its node's Lease renewal, or the CSPI status it last wrote (a daemon
// from before the Lease heartbeats there), whichever is later.
import { LABEL, TYPE_KEY } from "../../api/constants.js";
import type { CSPI, ObjectMap } from "../../api/types.js";

/** The labels every node daemon's Lease carries besides its node's hostname. */
export const NODE_LEASE_LABELS: Readonly<Record<string, string>> = {
  [LABEL.app]: "cstor-pool-node",
  [LABEL.component]: "node-daemon",
};

/** The latest parsable time of the two, as written; undefined when neither is, with what was unreadable. */
export interface LastReport {
  at?: string;
  /** A status.lastUpdateTime that is not an RFC 3339 time, when nothing better was found. */
  unreadable?: string;
}

/** The renewTime of the Leases labelled with the CSPI's host (normally one), read tolerantly. */
export function leaseRenewals(related: ObjectMap, hostName: string | undefined): string[] {
  return Object.values(related[TYPE_KEY.lease] ?? {})
    .filter((lease) => hostName !== undefined && lease.metadata.labels?.[LABEL.hostname] === hostName)
    .map((lease) => (lease as { spec?: { renewTime?: unknown } }).spec?.renewTime)
    .filter((time): time is string => typeof time === "string");
}

export function lastReport(cspi: CSPI, renewals: readonly string[]): LastReport {
  const reported = cspi.status?.lastUpdateTime;
  const latest = [...renewals, ...(reported ? [reported] : [])]
    .filter((time) => !Number.isNaN(Date.parse(time)))
    .sort((a, b) => Date.parse(b) - Date.parse(a))[0];
  if (latest) return { at: latest };
  return reported ? { unreadable: reported } : {};
}
