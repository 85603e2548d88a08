// Prometheus metrics on the daemon's own registry (no global default registry, so tests and several
// daemons in one process never collide). Names and labels follow Prometheus conventions
// (docs/adr/0031-metrics-state-sets-error-counts-as-gauges-volume.md): units in names, _total only on
// counters, states as a state set (one series per state, 1 for the current one), labels no wider than
// cspi/pool, device and volume. ZFS error counts are gauges, not counters: `zpool clear` and an
// export/import reset them. A pool's series exist only while this node
// looks after it, so a pool that moved to another node is never reported twice.
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { CSPI_PHASES } from "../api/schema.js";
import { DEFAULTS, LABEL } from "../api/constants.js";
import type { CSPI, CSPIStatus, CVR } from "../api/types.js";
import { zpoolName } from "../lib/names.js";
import { consistencyFactor } from "../lib/volume/children.js";
import type { CommandListener } from "../process/runner.js";
import { deviceHealth } from "./devices.js";
import type { Observation } from "../zfs/observation.js";
import { scanProgress } from "../zfs/parse.js";
import type { ReplicaState } from "./replicas.js";

/** Device states of the cstor_pool_device_state state set: what zpool prints for a leaf (spares: AVAIL, INUSE). */
export const DEVICE_STATES = [
  "ONLINE",
  "DEGRADED",
  "FAULTED",
  "OFFLINE",
  "UNAVAIL",
  "REMOVED",
  "AVAIL",
  "INUSE",
] as const;

export interface DaemonMetrics {
  registry: Registry;
  onCommand: CommandListener;
  action(kind: string, result: "done" | "failed"): void;
  /** A reconcile pass of a CSPI concerning this node ended: its duration, and what it observed and reported. */
  passed(pass: PassRecord): void;
  /** The replica pass's states of the CVRs on this CSPI's pool; `all` is every CVR the daemon knows (for each volume's replica count). */
  /** replicasOf: every CVR of a volume, on any pool (its consistency factor). */
  replicas(
    cspi: string,
    cvrs: readonly CVR[],
    states: Record<string, ReplicaState>,
    replicasOf: (volume: string) => readonly CVR[],
  ): void;
  /** The CSPI no longer concerns this node (deleted, or its pool is elsewhere): its series go. */
  forget(cspi: string): void;
  /** The CSPIs were listed (at start, after the watch ended or failed, or periodically). */
  relisted(reason: string): void;
  /** A watch event delivered to the daemon: what the apiserver sends this node, by kind and type. */
  watchEvent(kind: string, type: string): void;
  /** Where the age of the daemon's view of its CSPIs is read at each scrape (undefined: not listed yet). */
  viewAge(read: () => number | undefined): void;
}

export interface PassRecord {
  cspi: CSPI;
  seconds: number;
  now: Date;
  observation?: Observation;
  status?: CSPIStatus;
}

type Labels = Record<string, string>;

/** The series one CSPI wrote last: replaced whole at its next write, so a device or replica that went loses its series. */
class SeriesOf {
  private readonly written = new Map<string, [Gauge, Labels][]>();

  replace(cspi: string, values: readonly [Gauge, Labels, number][]): void {
    this.clear(cspi);
    for (const [gauge, labels, value] of values) gauge.set(labels, value);
    this.written.set(
      cspi,
      values.map(([gauge, labels]) => [gauge, labels]),
    );
  }

  clear(cspi: string): void {
    for (const [gauge, labels] of this.written.get(cspi) ?? []) gauge.remove(labels);
    this.written.delete(cspi);
  }
}

export function createMetrics(): DaemonMetrics {
  const registry = new Registry();
  const gauge: GaugeMaker = (name, help, labelNames) =>
    new Gauge({ name, help, labelNames, registers: [registry] });
  const pool = poolGauges(gauge);
  const device = deviceGauges(gauge);
  const replica = replicaGauges(gauge);
  const duration = new Histogram({
    name: "cstor_node_daemon_command_duration_seconds",
    help: "Duration of zpool/zfs commands by command and outcome (ok, or why it failed: exit, timeout, signal, spawn...)",
    labelNames: ["command", "outcome"],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
    registers: [registry],
  });
  const reconcile = new Histogram({
    name: "cstor_node_daemon_reconcile_duration_seconds",
    help: "Duration of one reconcile pass of a CSPI (observe, plan, act, report), by whether the pool could be observed",
    labelNames: ["result"],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120, 600],
    registers: [registry],
  });
  const actions = new Counter({
    name: "cstor_node_daemon_actions_total",
    help: "Planned actions executed, by action and result",
    labelNames: ["action", "result"],
    registers: [registry],
  });
  const relists = new Counter({
    name: "cstor_node_daemon_cspi_lists_total",
    help: "Lists of the namespace's CSPIs, by why: start, watch-ended, watch-failed, periodic",
    labelNames: ["reason"],
    registers: [registry],
  });
  const watchEvents = new Counter({
    name: "cstor_node_daemon_watch_events_total",
    help: "Watch events the apiserver delivered to this daemon, by kind (CStorPoolInstance, CStorVolumeReplica) and type (ADDED, MODIFIED, DELETED)",
    labelNames: ["kind", "type"],
    registers: [registry],
  });
  let readViewAge: () => number | undefined = () => undefined;
  new Gauge({
    name: "cstor_node_daemon_cspi_view_age_seconds",
    help: "Seconds since the daemon's view of its CSPIs was last confirmed by a watch event, a bookmark or a list; -1 before the first list",
    registers: [registry],
    collect() {
      this.set(readViewAge() ?? -1);
    },
  });
  const poolSeries = new SeriesOf();
  const replicaSeries = new SeriesOf();

  return {
    registry,
    onCommand: ({ argv, durationMs, error }) =>
      duration.observe({ command: commandLabel(argv), outcome: error?.kind ?? "ok" }, durationMs / 1000),
    action: (kind, result) => actions.inc({ action: kind, result }),
    relisted: (reason) => relists.inc({ reason }),
    watchEvent: (kind, type) => watchEvents.inc({ kind, type }),
    viewAge: (read) => {
      readViewAge = read;
    },
    passed: (record) => {
      const name = record.cspi.metadata.name ?? "";
      reconcile.observe({ result: record.observation ? "observed" : "failed" }, record.seconds);
      // Its replicas are not on this node any more either (the replica pass reports them Offline, from elsewhere).
      if (!record.observation?.pool) replicaSeries.clear(name);
      poolSeries.replace(name, poolSeriesOf(pool, device, record));
    },
    replicas: (cspi, cvrs, states, replicasOf) => {
      replicaSeries.replace(cspi, replicaSeriesOf(replica, { cspi, cvrs, states, replicasOf }));
    },
    forget: (cspi) => {
      poolSeries.clear(cspi);
      replicaSeries.clear(cspi);
    },
  };
}

type Series = [Gauge, Labels, number];
type GaugeMaker = (name: string, help: string, labelNames: readonly string[]) => Gauge;
type ImportedPool = NonNullable<Observation["pool"]>;

const POOL = ["cspi", "pool"];
const DEVICE = [...POOL, "device", "blockdevice"];

/** What the pool holds and has room for: zpool list's raw space, the datasets' space, the snapshots. */
function spaceGauges(gauge: GaugeMaker) {
  return {
    size: gauge("cstor_pool_size_bytes", "Raw size of the pool's data vdevs (zpool list SIZE)", POOL),
    allocated: gauge(
      "cstor_pool_allocated_bytes",
      "Raw bytes allocated in the pool (zpool list ALLOC)",
      POOL,
    ),
    free: gauge("cstor_pool_free_bytes", "Raw bytes free in the pool (zpool list FREE)", POOL),
    fragmentation: gauge(
      "cstor_pool_fragmentation_ratio",
      "Free space fragmentation, 0 to 1 (zpool list FRAG; OpenZFS only)",
      POOL,
    ),
    used: gauge(
      "cstor_pool_dataset_used_bytes",
      "Bytes used by the pool's root dataset and its children (what roThresholdLimit is measured on)",
      POOL,
    ),
    available: gauge(
      "cstor_pool_dataset_available_bytes",
      "Bytes still available to the pool's datasets",
      POOL,
    ),
    snapshots: gauge(
      "cstor_pool_snapshots",
      "ZFS snapshots of the pool's replicas, those deleted but kept for their clones included",
      POOL,
    ),
    snapshotUsed: gauge(
      "cstor_pool_snapshot_used_bytes",
      "Bytes the replicas' snapshots alone hold (their usedbysnapshots, summed; part of cstor_pool_dataset_used_bytes)",
      POOL,
    ),
  };
}

function poolGauges(gauge: GaugeMaker) {
  return {
    ...spaceGauges(gauge),
    phase: gauge(
      "cstor_pool_phase",
      "The CSPI's phase as the daemon reports it (status.phase), one series per phase: 1 for the current one, 0 for the others",
      [...POOL, "phase"],
    ),
    readOnly: gauge(
      "cstor_pool_readonly",
      "1 when the pool is read-only (its used capacity reached roThresholdLimit)",
      POOL,
    ),
    threshold: gauge(
      "cstor_pool_readonly_threshold_ratio",
      "poolConfig.roThresholdLimit as a ratio: used / (used + available) at which the pool turns read-only",
      POOL,
    ),
    resilvering: gauge("cstor_pool_resilver_active", "1 while a resilver runs", POOL),
    resilverProgress: gauge(
      "cstor_pool_resilver_progress_ratio",
      "How far the running resilver is, 0 to 1 (only while one runs)",
      POOL,
    ),
    scrubbing: gauge("cstor_pool_scrub_active", "1 while a scrub runs", POOL),
    scrubProgress: gauge(
      "cstor_pool_scrub_progress_ratio",
      "How far the running scrub is, 0 to 1 (only while one runs)",
      POOL,
    ),
    scrubEnd: gauge(
      "cstor_pool_scrub_last_end_timestamp_seconds",
      "When the pool's last scrub finished or was stopped (Unix time; status.scrub.lastEndTime)",
      POOL,
    ),
    scrubErrors: gauge(
      "cstor_pool_scrub_last_errors",
      "Errors the pool's last scrub found and could not repair (status.scrub.errors)",
      POOL,
    ),
    scrubRepaired: gauge(
      "cstor_pool_scrub_last_repaired_bytes",
      "Bytes the pool's last scrub repaired (status.scrub.repairedBytes)",
      POOL,
    ),
    observed: gauge(
      "cstor_pool_last_observation_timestamp_seconds",
      "When the daemon last read the pool's state successfully (Unix time)",
      POOL,
    ),
  };
}

type PoolGauges = ReturnType<typeof poolGauges>;

function deviceGauges(gauge: GaugeMaker) {
  return {
    state: gauge(
      "cstor_pool_device_state",
      "Each pool member's state as zpool prints it, one series per state: 1 for the current one",
      [...DEVICE, "state"],
    ),
    errors: gauge(
      "cstor_pool_device_errors",
      "Read, write and checksum errors ZFS counted on the device since import or the last zpool clear (reset by both: not a counter)",
      [...DEVICE, "type"],
    ),
  };
}

type DeviceGauges = ReturnType<typeof deviceGauges>;

function replicaGauges(gauge: GaugeMaker) {
  return {
    size: gauge(
      "cstor_volume_replica_size_bytes",
      "A volume replica's logical size on this pool (its volsize)",
      [...POOL, "volume"],
    ),
    used: gauge("cstor_volume_replica_used_bytes", "Bytes a volume replica uses on this pool", [
      ...POOL,
      "volume",
    ]),
    healthy: gauge(
      "cstor_volume_replica_healthy",
      "1 when the volume's replica on this pool is Healthy (CVR phase), 0 otherwise",
      [...POOL, "volume"],
    ),
    consistency: gauge(
      "cstor_volume_consistency_factor",
      "Healthy replicas a volume needs for writes (replicas/2 + 1, from its CVRs), beside each of its replicas",
      [...POOL, "volume"],
    ),
  };
}

/** A CSPI's series after a pass: its phase, and while its pool is imported here, the pool and its devices. */
function poolSeriesOf(
  pool: PoolGauges,
  device: DeviceGauges,
  { cspi, now, observation, status }: PassRecord,
): Series[] {
  const name = cspi.metadata.name ?? "";
  const labels = { cspi: name, pool: zpoolName(name) };
  const phase = status?.phase;
  const phases: Series[] = phase
    ? CSPI_PHASES.map((each) => [pool.phase, { ...labels, phase: each }, each === phase ? 1 : 0])
    : [];
  const imported = observation?.pool;
  if (!imported) return phases;
  const threshold = (cspi.spec.poolConfig?.roThresholdLimit ?? DEFAULTS.roThresholdLimit) / 100;
  return [
    ...phases,
    [pool.observed, labels, now.getTime() / 1000],
    ...capacitySeries(pool, labels, imported, threshold),
    ...scanSeries(pool, labels, imported.status.scan),
    ...scrubSeries(pool, labels, status?.scrub),
    ...deviceHealth(cspi, observation).flatMap((member) => deviceSeries(device, labels, member)),
  ];
}

function capacitySeries(
  pool: PoolGauges,
  labels: Labels,
  imported: ImportedPool,
  threshold: number,
): Series[] {
  const optional = {
    size: imported.size,
    allocated: imported.allocated,
    free: imported.free,
    fragmentation: imported.fragmentation,
  } as const;
  const values: Series[] = [];
  for (const [key, value] of Object.entries(optional) as [keyof typeof optional, number | undefined][]) {
    if (value !== undefined) values.push([pool[key], labels, value]);
  }
  if (imported.space)
    values.push([pool.used, labels, imported.space.used], [pool.available, labels, imported.space.available]);
  if (imported.snapshots) values.push([pool.snapshots, labels, imported.snapshots.length]);
  if (imported.snapshotBytes !== undefined) values.push([pool.snapshotUsed, labels, imported.snapshotBytes]);
  values.push([pool.readOnly, labels, imported.readonly ? 1 : 0]);
  values.push([pool.threshold, labels, threshold]);
  return values;
}

/** Whether a resilver or a scrub runs, and how far it is. */
function scanSeries(pool: PoolGauges, labels: Labels, scan: ImportedPool["status"]["scan"]): Series[] {
  const progress = scanProgress(scan);
  const values: Series[] = [];
  for (const [activity, active, ratio] of [
    ["resilver", pool.resilvering, pool.resilverProgress],
    ["scrub", pool.scrubbing, pool.scrubProgress],
  ] as const) {
    const running = scan.activity === activity && scan.inProgress;
    values.push([active, labels, running ? 1 : 0]);
    if (running && progress !== undefined) values.push([ratio, labels, progress]);
  }
  return values;
}

/** The last scrub as the status reports it. */
function scrubSeries(pool: PoolGauges, labels: Labels, scrub: CSPIStatus["scrub"]): Series[] {
  const values: Series[] = [];
  if (scrub?.lastEndTime) values.push([pool.scrubEnd, labels, Date.parse(scrub.lastEndTime) / 1000]);
  if (scrub?.errors !== undefined) values.push([pool.scrubErrors, labels, scrub.errors]);
  if (scrub?.repairedBytes !== undefined) values.push([pool.scrubRepaired, labels, scrub.repairedBytes]);
  return values;
}

function deviceSeries(
  device: DeviceGauges,
  labels: Labels,
  member: ReturnType<typeof deviceHealth>[number],
): Series[] {
  const at = { ...labels, device: member.path, blockdevice: member.blockDeviceName ?? "" };
  return [
    ...DEVICE_STATES.map((state): Series => [device.state, { ...at, state }, member.state === state ? 1 : 0]),
    [device.errors, { ...at, type: "read" }, member.readErrors],
    [device.errors, { ...at, type: "write" }, member.writeErrors],
    [device.errors, { ...at, type: "checksum" }, member.checksumErrors],
  ];
}

/** The replica series of one CSPI's pool: each live replica's health and size, and its volume's consistency factor. */
function replicaSeriesOf(
  replica: ReturnType<typeof replicaGauges>,
  { cspi, cvrs, states, replicasOf }: ReplicaRecord,
): Series[] {
  const labels = { cspi, pool: zpoolName(cspi) };
  const values: Series[] = [];
  const volumes = new Set<string>();
  for (const cvr of cvrs) {
    const volume = cvr.metadata.labels?.[LABEL.replicaVolume];
    const state = states[cvr.metadata.name ?? ""];
    if (!volume || !state || cvr.metadata.deletionTimestamp) continue;
    volumes.add(volume);
    const at = { ...labels, volume };
    values.push([replica.healthy, at, state.phase === "Healthy" ? 1 : 0]);
    if (state.capacity)
      values.push([replica.size, at, state.capacity.total], [replica.used, at, state.capacity.used]);
  }
  for (const volume of volumes) {
    const count = replicasOf(volume).filter((cvr) => !cvr.metadata.deletionTimestamp).length;
    values.push([replica.consistency, { ...labels, volume }, consistencyFactor(count)]);
  }
  return values;
}

/** The arguments of DaemonMetrics.replicas. */
interface ReplicaRecord {
  cspi: string;
  cvrs: readonly CVR[];
  states: Record<string, ReplicaState>;
  replicasOf: (volume: string) => readonly CVR[];
}

/** "zpool create", "zfs get": the binary's base name and the subcommand, never device paths. */
function commandLabel(argv: readonly string[]): string {
  const index = argv.findIndex((arg) => /(^|\/)(zpool|zfs)$/.test(arg));
  if (index < 0) return argv[0] ?? "";
  const binary = argv[index].split("/").pop()!;
  return `${binary} ${argv[index + 1] ?? ""}`.trim();
}
