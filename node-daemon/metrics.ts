// Prometheus metrics on the daemon's own registry (no global default registry, so tests and several
// daemons in one process never collide).
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { CSPI, CSPIStatus } from "../api/types.js";
import { zpoolName } from "../lib/names.js";
import type { CommandListener } from "./command.js";
import type { Observation } from "./observation.js";
import { allLeaves } from "./parse.js";

/** Pool health as a number: 0 is healthy, higher is worse; -1 when the pool is not imported here. */
export const HEALTH_VALUE: Record<string, number> = { ONLINE: 0, DEGRADED: 1, FAULTED: 2, OFFLINE: 3, UNAVAIL: 4, REMOVED: 5 };

export interface DaemonMetrics {
  registry: Registry;
  onCommand: CommandListener;
  action(kind: string, result: "done" | "failed"): void;
  observe(cspi: CSPI, observation: Observation, status: CSPIStatus | undefined): void;
  /** The CSPIs were listed (at start, after the watch ended or failed, or periodically). */
  relisted(reason: string): void;
  /** Where the age of the daemon's view of its CSPIs is read at each scrape (undefined: not listed yet). */
  viewAge(read: () => number | undefined): void;
}

/** One pool as a process reporting it sees it; state undefined: not imported here. */
export interface PoolReading {
  pool: string;
  cspi: string;
  state?: string;
  space?: { used: number; available: number };
  readOnly?: boolean;
}

/**
 * The pool's health, capacity and read-only gauges, under the same names in every process that reports a
 * pool (the node daemon, the pool agent), so dashboards read either.
 */
export function poolGauges(registry: Registry): (reading: PoolReading) => void {
  const health = new Gauge({ name: "cstor_pool_health", help: "Pool health: 0 ONLINE, 1 DEGRADED, 2 FAULTED, 3 OFFLINE, 4 UNAVAIL, 5 REMOVED, 6 other, -1 not imported here", labelNames: ["pool", "cspi"], registers: [registry] });
  const capacity = new Gauge({ name: "cstor_pool_capacity_bytes", help: "Pool capacity of the root dataset in bytes", labelNames: ["pool", "kind"], registers: [registry] });
  const readOnly = new Gauge({ name: "cstor_pool_readonly", help: "1 when the pool is read-only (roThresholdLimit reached)", labelNames: ["pool"], registers: [registry] });
  return ({ pool, cspi, state, space, readOnly: ro }) => {
    health.set({ pool, cspi }, state === undefined ? -1 : (HEALTH_VALUE[state] ?? 6));
    if (state === undefined) return;
    if (space) {
      capacity.set({ pool, kind: "used" }, space.used);
      capacity.set({ pool, kind: "free" }, space.available);
      capacity.set({ pool, kind: "total" }, space.used + space.available);
    }
    readOnly.set({ pool }, ro ? 1 : 0);
  };
}

export function createMetrics(): DaemonMetrics {
  const registry = new Registry();
  const setPool = poolGauges(registry);
  const vdevErrors = new Gauge({ name: "cstor_pool_vdev_errors", help: "Read, write and checksum errors ZFS counts per device", labelNames: ["pool", "vdev", "type"], registers: [registry] });
  const duration = new Histogram({
    name: "cstor_pool_command_duration_seconds",
    help: "Duration of zpool/zfs commands",
    labelNames: ["command"],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
    registers: [registry],
  });
  const failures = new Counter({ name: "cstor_pool_command_failures_total", help: "zpool/zfs commands that failed", labelNames: ["command", "kind"], registers: [registry] });
  const actions = new Counter({ name: "cstor_pool_actions_total", help: "Planned actions executed", labelNames: ["action", "result"], registers: [registry] });
  const relists = new Counter({ name: "cstor_node_daemon_cspi_lists_total", help: "Lists of the namespace's CSPIs, by why: start, watch-ended, watch-failed, periodic", labelNames: ["reason"], registers: [registry] });
  let readViewAge: () => number | undefined = () => undefined;
  new Gauge({
    name: "cstor_node_daemon_cspi_view_age_seconds",
    help: "Seconds since the daemon's view of its CSPIs was last confirmed by a watch event, a bookmark or a list; -1 before the first list",
    registers: [registry],
    collect() {
      this.set(readViewAge() ?? -1);
    },
  });

  return {
    registry,
    onCommand: ({ argv, durationMs, error }) => {
      const command = commandLabel(argv);
      duration.observe({ command }, durationMs / 1000);
      if (error) failures.inc({ command, kind: error.kind });
    },
    action: (kind, result) => actions.inc({ action: kind, result }),
    relisted: (reason) => relists.inc({ reason }),
    viewAge: (read) => {
      readViewAge = read;
    },
    observe: (cspi, observation, status) => {
      const pool = zpoolName(cspi.metadata.name ?? "");
      const imported = observation.pool;
      setPool({ pool, cspi: cspi.metadata.name ?? "", state: imported?.status.state, space: imported?.space, readOnly: status?.readOnly });
      if (!imported) return;
      for (const leaf of allLeaves(imported.status.layout)) {
        if (!leaf.errors) continue;
        const vdev = leaf.device ?? leaf.name;
        vdevErrors.set({ pool, vdev, type: "read" }, leaf.errors.read);
        vdevErrors.set({ pool, vdev, type: "write" }, leaf.errors.write);
        vdevErrors.set({ pool, vdev, type: "checksum" }, leaf.errors.checksum);
      }
    },
  };
}

/** "zpool create", "zfs get": the binary's base name and the subcommand, never device paths. */
function commandLabel(argv: readonly string[]): string {
  const index = argv.findIndex((arg) => /(^|\/)(zpool|zfs)$/.test(arg));
  if (index < 0) return argv[0] ?? "";
  const binary = argv[index].split("/").pop()!;
  return `${binary} ${argv[index + 1] ?? ""}`.trim();
}
