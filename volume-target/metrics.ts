// The volume's metrics on :9500 (the target Service's `metrics` port): the target's state, its replicas by
// state, the LUN's write protection and rebuild progress, the I/O the array served, from md's own counters
// (/sys/block/mdN/stat), and its snapshots' holds and outcomes. One series per state, per replica and per
// outcome: nothing grows with requests.
import { Counter, Gauge, Registry } from "prom-client";
import { TARGET_REPLICA_STATES, TARGET_STATES } from "../api/volume-schema.js";
import type { BlockStat } from "../md/mdadm.js";
import type { TargetState } from "./status.js";
import type { ReplicaState } from "./plan.js";

const SECTOR = 512;

export interface TargetView {
  state: TargetState;
  replicas: readonly ReplicaState[];
  consistencyFactor: number;
  writeProtected: boolean;
  /** md's counters for the array, when assembled. */
  stat?: BlockStat;
  /** md's progress through a running recovery, 0 to 1 (sectors, not whole percent: a big rebuild moves slowly). */
  rebuildRatio?: number;
}

/** How a snapshot's attempt ended: the phase the target wrote. */
export type SnapshotResult = "ReadyToUse" | "Failed";

export interface TargetMetrics {
  registry: Registry;
  update(view: TargetView): void;
  /** A snapshot's hold ended: how long md held the volume's writes. */
  snapshotHold(seconds: number): void;
  snapshotOutcome(result: SnapshotResult): void;
}

type Counters = Record<
  "reads" | "writes" | "readBytes" | "writtenBytes" | "readSeconds" | "writeSeconds",
  Counter
>;

export function createTargetMetrics(volume: string, namespace: string): TargetMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ volume, namespace });
  const gauge = (name: string, help: string, labelNames: string[] = []) =>
    new Gauge({ name, help, labelNames, registers: [registry] });
  const counter = (name: string, help: string) => new Counter({ name, help, registers: [registry] });
  const state = gauge("cstor_volume_target_state", "1 for the target's current state, 0 for the others", [
    "state",
  ]);
  const replicas = gauge(
    "cstor_volume_target_replicas",
    "The volume's replicas in each state, as the target sees them",
    ["state"],
  );
  const factor = gauge("cstor_volume_target_consistency_factor", "Replicas in sync a write needs");
  const writeProtected = gauge(
    "cstor_volume_target_write_protected",
    "1 while the LUN refuses writes (fewer replicas in sync than the consistency factor)",
  );
  const rebuild = gauge(
    "cstor_volume_target_rebuild_ratio",
    "Progress of a replica's rebuild, 0 to 1 (present while it rebuilds)",
    ["replica"],
  );
  const counters: Counters = {
    reads: counter("cstor_volume_target_reads_total", "Reads the array completed"),
    writes: counter("cstor_volume_target_writes_total", "Writes the array completed"),
    readBytes: counter("cstor_volume_target_read_bytes_total", "Bytes read from the array"),
    writtenBytes: counter("cstor_volume_target_written_bytes_total", "Bytes written to the array"),
    readSeconds: counter(
      "cstor_volume_target_read_seconds_total",
      "Time reads spent in the array (rate over reads rate: average latency)",
    ),
    writeSeconds: counter(
      "cstor_volume_target_write_seconds_total",
      "Time writes spent in the array (rate over writes rate: average latency)",
    ),
  };
  const lastHold = gauge(
    "cstor_volume_target_snapshot_hold_seconds",
    "How long the last snapshot held the volume's writes (a writer's stall; at most SNAPSHOT_HOLD_SECONDS)",
  );
  const outcomes = new Counter({
    name: "cstor_volume_target_snapshots_total",
    help: "Snapshot attempts by how they ended: ReadyToUse, or Failed (a replica did not confirm within the bound, md did not hold, or the volume was degraded)",
    labelNames: ["result"],
    registers: [registry],
  });
  for (const result of ["ReadyToUse", "Failed"] satisfies SnapshotResult[]) outcomes.inc({ result }, 0);
  let last: BlockStat | undefined;
  return {
    registry,
    snapshotHold(seconds) {
      lastHold.set(seconds);
    },
    snapshotOutcome(result) {
      outcomes.inc({ result });
    },
    update(view) {
      for (const s of TARGET_STATES) state.set({ state: s }, s === view.state ? 1 : 0);
      for (const s of TARGET_REPLICA_STATES)
        replicas.set({ state: s }, view.replicas.filter((r) => r.state === s).length);
      factor.set(view.consistencyFactor);
      writeProtected.set(view.writeProtected ? 1 : 0);
      rebuild.reset();
      for (const r of view.replicas)
        if (r.state === "Rebuilding") rebuild.set({ replica: r.replicaId }, view.rebuildRatio ?? 0);
      if (view.stat) {
        addDelta(counters, last, view.stat);
        last = view.stat;
      }
    },
  };
}

/** md's counters restart with the array (a re-assembly): a counter only ever adds what grew since the last read. */
function addDelta(counters: Counters, before: BlockStat | undefined, now: BlockStat): void {
  const grew = (key: keyof BlockStat) => {
    const base = before && before[key] <= now[key] ? before[key] : 0;
    return now[key] - base;
  };
  counters.reads.inc(grew("reads"));
  counters.writes.inc(grew("writes"));
  counters.readBytes.inc(grew("readSectors") * SECTOR);
  counters.writtenBytes.inc(grew("writeSectors") * SECTOR);
  counters.readSeconds.inc(grew("readMs") / 1000);
  counters.writeSeconds.inc(grew("writeMs") / 1000);
}
