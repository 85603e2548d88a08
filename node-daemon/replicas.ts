// The replica planner (docs/adr/0011-a-replica-is-a-zvol-on-the-pool-data-reaches.md): pure. From the CStorVolumeReplicas (CVRs) of one CSPI and ONE
// observation of its pool's datasets and snapshots it plans the commands that make each CVR's replica exist at
// its size with the snapshots its annotations ask for (replica-snapshots.ts), or be gone when the CVR is
// deleted, and says each CVR's state. A replica is `<zpool>/<volume>` carrying the io.openebs:* properties; the
// backend (zvol or file, chosen by configuration) says which commands make it. A CVR with spec.source starts as
// a clone of another replica's snapshot on the same pool (replica-clones.ts).
import { FINALIZER, LABEL } from "../api/constants.js";
import type { CVR, CVRStatus } from "../api/types.js";
import { CVR_PHASES } from "../api/volume-schema.js";
import { formatTime } from "../lib/conditions.js";
import { parseQuantity } from "../lib/quantity.js";
import type { DatasetRecord, SnapshotRecord } from "../zfs/parse.js";
import { bytesProperty, REPLICA_FILE, REPLICA_PROPERTY, type HostCommand } from "../zfs/layout.js";
import {
  cloneIndex,
  clonesHoldReplica,
  findOrigin,
  type CloneIndex,
  type Origin,
  type ReplicaSource,
} from "./replica-clones.js";
import { snapshotNameProblem } from "../lib/volume/replica-snapshots.js";
import {
  deferredHoldReplica,
  planSnapshots,
  snapshotsByDataset,
  snapshotsHoldReplica,
  type HeldSnapshot,
  type ReportedSnapshot,
  type SnapshotAction,
} from "./replica-snapshots.js";

/**
 * Every replica's size is a multiple of this, its volblocksize: ZFS refuses a volsize that is not ("volume
 * size must be a multiple of volume block size"), so a capacity such as 1G (10^9 bytes) is rounded UP to the
 * next 4 KiB. A replica is never smaller than asked; the file backend rounds the same way so both agree.
 */
export const REPLICA_BLOCK_BYTES = 4096;

export const REPLICA_BACKENDS = ["zvol", "file"] as const;
export type ReplicaBackendName = (typeof REPLICA_BACKENDS)[number];

/** What the planner wants on the pool for one CVR. */
export interface Replica {
  cvr: string;
  volume: string;
  replicaId: string;
  dataset: string;
  bytes: number;
}

/** How a replica is made on the pool: the exact commands, so golden files pin them. */
export interface ReplicaBackend {
  readonly name: ReplicaBackendName;
  /** The ZFS type a replica of this backend is; a dataset of the other type is not ours. */
  readonly datasetType: "volume" | "filesystem";
  /** The replica's size as observed; undefined when creation has not finished (file backend: no file yet). */
  size(dataset: DatasetRecord): number | undefined;
  create(replica: Replica): HostCommand[];
  /** Made as a clone of `origin` instead, with the properties `create` gives that `zfs clone` takes; then grown. */
  clone(replica: Replica, origin: Origin): HostCommand[];
  grow(replica: Replica, dataset: DatasetRecord): HostCommand[];
  destroy(dataset: string): HostCommand[];
}

function identity(replica: Replica): string[] {
  return [
    "-o",
    `${REPLICA_PROPERTY.volume}=${replica.volume}`,
    "-o",
    `${REPLICA_PROPERTY.replicaId}=${replica.replicaId}`,
    "-o",
    `${REPLICA_PROPERTY.cvr}=${replica.cvr}`,
  ];
}

/**
 * Marked first, so the pool agent drops its iSCSI export, which holds the replica open (docs/adr/0032-the-pool-agent-what-it-reads-how-it-exports.md): until it
 * has, the destroy fails as busy and the next pass tries again. -r: the replica's snapshots nobody lists go
 * with it (planned only then: replica-snapshots.ts); never -f, never -R (that would destroy clones elsewhere).
 */
const destroyDataset = (dataset: string): HostCommand[] => [
  { program: "zfs", args: ["set", `${REPLICA_PROPERTY.destroying}=on`, dataset] },
  { program: "zfs", args: ["destroy", "-r", dataset] },
];

/** OpenZFS zvol: sparse, 4K blocks, the pool's compression inherited. What the DaemonSet ships. */
export function zvolBackend(): ReplicaBackend {
  return {
    name: "zvol",
    datasetType: "volume",
    size: (dataset) => bytesProperty(dataset, "volsize"),
    create: (replica) => [
      {
        program: "zfs",
        args: [
          "create",
          "-s",
          "-V",
          String(replica.bytes),
          "-b",
          "4K",
          ...identity(replica),
          replica.dataset,
        ],
      },
    ],
    // The clone's volblocksize is its origin's, and a clone has no reservation: -b and -s do not apply.
    clone: (replica, origin) => [
      { program: "zfs", args: ["clone", ...identity(replica), origin.snapshot, replica.dataset] },
    ],
    grow: (replica) => [{ program: "zfs", args: ["set", `volsize=${replica.bytes}`, replica.dataset] }],
    destroy: destroyDataset,
  };
}

/**
 * A dataset mounted at <fileDir>/<dataset> holding one sparse file, REPLICA_FILE (zfs-fuse has no zvols). The
 * file is sized with `truncate -s '>N'` (grow only: it never cuts a file shorter), then the size is recorded
 * in io.openebs:file-size, so one `zfs get` tells every replica's size. A failure between the two leaves the
 * property behind: the next pass grows again, which changes nothing but the property.
 */
export function fileBackend(fileDir: string): ReplicaBackend {
  const mountpoint = (dataset: string) => `${fileDir.replace(/\/+$/, "")}/${dataset}`;
  const sizeFile = (replica: Replica, dir: string): HostCommand[] => [
    { program: "truncate", args: ["-s", `>${replica.bytes}`, `${dir}/${REPLICA_FILE}`] },
    { program: "zfs", args: ["set", `${REPLICA_PROPERTY.fileSize}=${replica.bytes}`, replica.dataset] },
  ];
  return {
    name: "file",
    datasetType: "filesystem",
    size: (dataset) => bytesProperty(dataset, REPLICA_PROPERTY.fileSize),
    create: (replica) => [
      {
        program: "zfs",
        args: [
          "create",
          "-o",
          `mountpoint=${mountpoint(replica.dataset)}`,
          ...identity(replica),
          replica.dataset,
        ],
      },
      ...sizeFile(replica, mountpoint(replica.dataset)),
    ],
    // The snapshot's replica.img comes with it: its size, carried from the snapshot's row, is the clone's.
    clone: (replica, origin) => [
      {
        program: "zfs",
        args: [
          "clone",
          "-o",
          `mountpoint=${mountpoint(replica.dataset)}`,
          ...identity(replica),
          "-o",
          `${REPLICA_PROPERTY.fileSize}=${origin.bytes}`,
          origin.snapshot,
          replica.dataset,
        ],
      },
    ],
    grow: (replica, dataset) =>
      sizeFile(replica, dataset.properties.mountpoint ?? mountpoint(replica.dataset)),
    // zfs-fuse's `zfs destroy` of a mounted dataset answers busy until something else unmounts it (measured: every
    // time, also with no file open); `mountpoint=none` unmounts it, stays set when a holder makes the unmount
    // fail (the next pass tries again) and changes nothing when repeated.
    destroy: (dataset) => {
      const [mark, destroy] = destroyDataset(dataset);
      return [mark, { program: "zfs", args: ["set", "mountpoint=none", dataset] }, destroy];
    },
  };
}

/**
 * CSTOR_REPLICA_BACKEND (zvol, the default, or file) and, for file, CSTOR_REPLICA_FILE_DIR (default
 * /var/openebs/replicas). Any other value is an error at start-up: a replica backend is never guessed.
 */
export function replicaBackendFromEnv(env: NodeJS.ProcessEnv): ReplicaBackend {
  const name = env.CSTOR_REPLICA_BACKEND ?? "zvol";
  if (name === "zvol") return zvolBackend();
  if (name === "file") {
    const dir = env.CSTOR_REPLICA_FILE_DIR || "/var/openebs/replicas";
    if (
      !/^(\/[A-Za-z0-9._:+@,=-]+)+\/?$/.test(dir) ||
      dir.split("/").some((part) => part === "." || part === "..")
    ) {
      throw new Error(
        `CSTOR_REPLICA_FILE_DIR must be an absolute, normalised directory path, e.g. /var/openebs/replicas; got ${JSON.stringify(dir)}`,
      );
    }
    return fileBackend(dir);
  }
  throw new Error(
    `CSTOR_REPLICA_BACKEND must be one of ${REPLICA_BACKENDS.join(", ")} (zvol on OpenZFS; file where ZFS has no zvols, e.g. zfs-fuse); got ${JSON.stringify(name)}`,
  );
}

export type ReplicaPhase = (typeof CVR_PHASES)[number];

/** One CVR as the pool shows it; becomes its status (replicaStatus). */
export interface ReplicaState {
  phase: ReplicaPhase;
  reason?: string;
  message?: string;
  /** Bytes: the replica's size and what it uses on the pool. */
  capacity?: { total: number; used: number };
  /** The replica's snapshots for status.snapshots; absent while none is known (none held, or the pool unread). */
  snapshots?: ReportedSnapshot[];
}

export type ReplicaAction =
  | {
      kind: "create-replica" | "grow-replica" | "destroy-replica";
      key: string;
      cvr: string;
      dataset: string;
      bytes?: number;
      commands: HostCommand[];
    }
  | {
      kind: "clone-replica";
      key: string;
      cvr: string;
      dataset: string;
      /** The snapshot cloned, and its size: the replica's until it is grown. */
      origin: string;
      bytes: number;
      commands: HostCommand[];
    }
  | SnapshotAction
  | { kind: "remove-replica-finalizer"; key: string; cvr: string; dataset: string };

export interface ReplicaPlanInput {
  /** The zpool (lib/names.ts zpoolName of the CSPI). */
  pool: string;
  /** The pool as this node has it; undefined when it is not imported here (exported, lost, or elsewhere). */
  imported?: {
    health: string;
    readonly: boolean;
    datasets: readonly DatasetRecord[];
    snapshots: readonly SnapshotRecord[];
  };
  /** The CVRs whose LABEL.replicaPool names this CSPI. */
  cvrs: readonly CVR[];
  backend: ReplicaBackend;
}

export interface ReplicaPlan {
  actions: ReplicaAction[];
  /** By CVR name. */
  states: Record<string, ReplicaState>;
}

const SERVING_HEALTH: ReadonlySet<string> = new Set(["ONLINE", "DEGRADED"]);
/** A Kubernetes object name (DNS-1123 subdomain): also a valid ZFS dataset component. */
const VOLUME_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
/** Written into a ZFS user property value through an argument array: printable, no separators. */
const REPLICA_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

export function planReplicas(input: ReplicaPlanInput): ReplicaPlan {
  const plan: ReplicaPlan = { actions: [], states: {} };
  // By name, once: a pass over a pool of N replicas (and their snapshots) stays linear in N.
  const datasets = new Map((input.imported?.datasets ?? []).map((d) => [d.name, d]));
  const snapshots = snapshotsByDataset(input.imported?.snapshots ?? []);
  const pool: IndexedPool = {
    ...input,
    clones: cloneIndex(input.imported?.datasets ?? [], input.imported?.snapshots ?? []),
  };
  const cvrs = [...input.cvrs].sort((a, b) => ((a.metadata.name ?? "") < (b.metadata.name ?? "") ? -1 : 1));
  for (const cvr of cvrs) {
    const name = cvr.metadata.name ?? "";
    const wanted = wantedReplica(input.pool, cvr);
    if ("problem" in wanted) {
      plan.states[name] = invalidSpec(name, wanted.problem);
      continue;
    }
    const { dataset } = wanted.replica;
    const { state, actions } = planOne(pool, cvr, wanted.replica, {
      dataset: datasets.get(dataset),
      snapshots: snapshots.get(dataset) ?? [],
    });
    plan.states[name] = state;
    plan.actions.push(...actions);
  }
  // A volume's writes are held until its replicas' snapshots are taken: those go before anything else.
  const takes = plan.actions.filter((a) => a.kind === "snapshot-replica");
  plan.actions = [...takes, ...plan.actions.filter((a) => a.kind !== "snapshot-replica")];
  return plan;
}

function wantedReplica(pool: string, cvr: CVR): { replica: Replica } | { problem: string } {
  const name = cvr.metadata.name ?? "";
  const volume = cvr.metadata.labels?.[LABEL.replicaVolume] ?? "";
  if (!VOLUME_NAME.test(volume)) {
    return {
      problem: `label ${LABEL.replicaVolume} must name the volume (a Kubernetes object name); got ${JSON.stringify(volume)}: the volume's cvc-sync sets it`,
    };
  }
  const replicaId = typeof cvr.spec?.replicaId === "string" ? cvr.spec.replicaId : "";
  if (!REPLICA_ID.test(replicaId)) {
    return {
      problem: `spec.replicaId must be 1-64 letters, digits, '.', '_', ':' or '-'; got ${JSON.stringify(replicaId)}`,
    };
  }
  const capacity = typeof cvr.spec?.capacity === "string" ? parseQuantity(cvr.spec.capacity) : undefined;
  const bytes = capacity ? alignedBytes(capacity.nano) : undefined;
  if (bytes === undefined) {
    return {
      problem: `spec.capacity must be a positive size such as 10Gi; got ${JSON.stringify(cvr.spec?.capacity)}`,
    };
  }
  return { replica: { cvr: name, volume, replicaId, dataset: `${pool}/${volume}`, bytes } };
}

function invalidSpec(cvr: string, problem: string): ReplicaState {
  return { phase: "Error", reason: "InvalidSpec", message: `CStorVolumeReplica ${cvr}: ${problem}` };
}

/** spec.source, read only when the replica is created: absent, or both names valid. */
function sourceOf(cvr: CVR): { source?: ReplicaSource } | { problem: string } {
  const source: unknown = cvr.spec?.source;
  if (source === undefined) return {};
  const { replica, snapshot } = (source ?? {}) as Record<string, unknown>;
  if (typeof replica !== "string" || !VOLUME_NAME.test(replica))
    return {
      problem: `spec.source.replica must name the CStorVolumeReplica whose snapshot is cloned (a Kubernetes object name); got ${JSON.stringify(replica)}: the volume's cvc-sync sets it`,
    };
  if (typeof snapshot !== "string" || snapshotNameProblem(snapshot))
    return {
      problem: `spec.source.snapshot must name the CStorVolumeSnapshot to clone; got ${JSON.stringify(snapshot)}: the volume's cvc-sync sets it`,
    };
  return { source: { replica, snapshot } };
}

/** A quantity (in nano units) in bytes rounded up to the block size; undefined for 0 or beyond 2^53. */
function alignedBytes(nano: bigint): number | undefined {
  const block = BigInt(REPLICA_BLOCK_BYTES);
  const bytes = (nano + 10n ** 9n - 1n) / 10n ** 9n;
  const aligned = ((bytes + block - 1n) / block) * block;
  return aligned > 0n && aligned <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(aligned) : undefined;
}

/** One CVR's state on the pool, and the actions that move it on, in order. */
interface ReplicaStep {
  state: ReplicaState;
  actions: ReplicaAction[];
}

/** What the pool holds under a replica's name. */
interface OnPool {
  dataset?: DatasetRecord;
  snapshots: readonly HeldSnapshot[];
}

/** The plan's input with its clone index, built once per plan. */
type IndexedPool = ReplicaPlanInput & { clones: CloneIndex };

/** The plan's input once the pool is known to be imported here and serving. */
type ServingPool = IndexedPool & Required<Pick<ReplicaPlanInput, "imported">>;

function planOne(input: IndexedPool, cvr: CVR, replica: Replica, onPool: OnPool): ReplicaStep {
  const { imported } = input;
  const { dataset } = onPool;
  const deleting = cvr.metadata.deletionTimestamp !== undefined;
  if (!imported) {
    return {
      state: {
        phase: "Offline",
        reason: "PoolNotImported",
        message: `pool ${input.pool} is not imported on this node (exported, lost, or held elsewhere)${deleting ? ": the replica is destroyed once it is back" : ""}`,
      },
      actions: [],
    };
  }
  if (!SERVING_HEALTH.has(imported.health)) {
    return {
      state: {
        phase: "Offline",
        reason: "PoolNotOnline",
        message: `pool ${input.pool} is ${imported.health}`,
      },
      actions: [],
    };
  }
  const pool: ServingPool = { ...input, imported };
  if (deleting) return planDeletion(pool, cvr, replica, onPool);
  if (!dataset) return planCreation(pool, cvr, replica);
  const foreign = foreignProblem(pool.backend, replica, dataset);
  if (foreign) return { state: { phase: "Error", reason: "ForeignDataset", message: foreign }, actions: [] };
  const sized = planSize(pool, cvr, replica, dataset);
  // Taken only of a replica whose data is served and can be written; destroyed while the pool serves.
  const snapshots = planSnapshots(cvr, replica.dataset, onPool.snapshots, sized.state.phase === "Healthy");
  const state = withSnapshots(sized.state, snapshots.reported);
  return {
    state: snapshots.note && state.reason === undefined ? { ...state, ...snapshots.note } : state,
    actions: [...snapshots.actions, ...sized.actions],
  };
}

function withSnapshots(state: ReplicaState, reported: ReportedSnapshot[]): ReplicaState {
  return reported.length > 0 ? { ...state, snapshots: reported } : state;
}

/** A deleted CVR: its replica destroyed (unless its clones or snapshots keep it), then its finalizer removed. */
function planDeletion(
  { backend, imported, clones }: ServingPool,
  cvr: CVR,
  replica: Replica,
  { dataset, snapshots }: OnPool,
): ReplicaStep {
  const foreign = dataset ? foreignProblem(backend, replica, dataset) : undefined;
  if (dataset && !foreign) {
    // Never taken now; while the replica is kept, the snapshots the list dropped still go.
    const plan = planSnapshots(cvr, replica.dataset, snapshots, false);
    const existing = withSnapshots(
      existingState(backend, replica, dataset, imported.readonly),
      plan.reported,
    );
    const kept = keptBy(cvr, replica.dataset, snapshots, clones.clones.get(replica.dataset) ?? []);
    if (kept) return { state: { ...existing, ...kept }, actions: plan.actions };
    return {
      state: existing,
      actions: [
        {
          kind: "destroy-replica",
          key: `destroy-replica:${replica.dataset}`,
          ...actionTarget(replica),
          commands: backend.destroy(replica.dataset),
        },
      ],
    };
  }
  // Nothing of this CVR's is on the pool (a foreign dataset under its name is left alone): it may go.
  const finalizer = (cvr.metadata.finalizers ?? []).includes(FINALIZER.replicaProtection);
  return {
    state: foreign
      ? { phase: "Error", reason: "ForeignDataset", message: foreign }
      : { phase: "Init", reason: "Deleted", message: `replica ${replica.dataset} is destroyed` },
    actions: finalizer
      ? [
          {
            kind: "remove-replica-finalizer",
            key: `remove-replica-finalizer:${replica.cvr}`,
            ...actionTarget(replica),
          },
        ]
      : [],
  };
}

/**
 * Why a deleted CVR's replica stays, in the order its user clears them: its snapshot list, then the volumes
 * restored from its snapshots (ZFS would refuse), then a deleted snapshot ZFS keeps for a clone not seen.
 */
function keptBy(
  cvr: CVR,
  dataset: string,
  snapshots: readonly HeldSnapshot[],
  clones: readonly DatasetRecord[],
): { reason: string; message: string } | undefined {
  const byList = snapshotsHoldReplica(cvr, dataset, snapshots);
  if (byList) return { reason: "SnapshotsExist", message: byList };
  const byClones = clonesHoldReplica(dataset, clones);
  if (byClones) return { reason: "ClonesExist", message: byClones };
  const byDeferred = deferredHoldReplica(dataset, snapshots);
  return byDeferred ? { reason: "SnapshotsExist", message: byDeferred } : undefined;
}

function planCreation(pool: ServingPool, cvr: CVR, replica: Replica): ReplicaStep {
  const { backend } = pool;
  const wanted = sourceOf(cvr);
  if ("problem" in wanted) return { state: invalidSpec(replica.cvr, wanted.problem), actions: [] };
  if (wanted.source) return planClone(pool, cvr, replica, wanted.source);
  return {
    state: {
      phase: "Init",
      reason: "Creating",
      message: `creating replica ${replica.dataset} of ${replica.bytes} bytes (${backend.name})`,
    },
    actions: [
      {
        kind: "create-replica",
        key: `create-replica:${replica.dataset}`,
        ...actionTarget(replica),
        bytes: replica.bytes,
        commands: backend.create(replica),
      },
    ],
  };
}

/**
 * A CVR with spec.source, not on the pool yet: a clone of the snapshot, grown afterwards as any replica is. Never
 * a blank replica in its place, which would serve zeros as the restored data.
 */
function planClone(pool: ServingPool, cvr: CVR, replica: Replica, source: ReplicaSource): ReplicaStep {
  const origin = findOrigin(pool.clones, source, pool.backend, pool.pool);
  if ("problem" in origin)
    return {
      state: {
        phase: "Error",
        reason: "SourceSnapshotMissing",
        message:
          `replica ${replica.dataset} is not created: ${origin.problem}; a blank replica in its place would serve zeros as the restored data. ` +
          `Delete this volume and restore it again from a CStorVolumeSnapshot that is ReadyToUse; the replica is cloned once the snapshot is on pool ${pool.pool}`,
      },
      actions: [],
    };
  if (origin.bytes > replica.bytes)
    return {
      state: {
        phase: "Error",
        reason: "ShrinkRefused",
        message:
          `${smallerThan(cvr, replica, `snapshot ${origin.snapshot} (${origin.bytes} bytes)`)}, which replica ${replica.dataset} would be cloned from: ` +
          `a replica is never shrunk; set the volume's capacity to at least the snapshot's size`,
      },
      actions: [],
    };
  return {
    state: {
      phase: "Init",
      reason: "Creating",
      message: `cloning replica ${replica.dataset} from ${origin.snapshot} (${origin.bytes} bytes${origin.bytes < replica.bytes ? `, then grown to ${replica.bytes}` : ""}; ${pool.backend.name})`,
    },
    actions: [
      {
        kind: "clone-replica",
        key: `clone-replica:${replica.dataset}`,
        ...actionTarget(replica),
        origin: origin.snapshot,
        bytes: origin.bytes,
        commands: pool.backend.clone(replica, origin),
      },
    ],
  };
}

/** "spec.capacity 8Mi (8388608 bytes once rounded up to 4096) is smaller than <what>": a shrink refused. */
function smallerThan(cvr: CVR, replica: Replica, what: string): string {
  return `spec.capacity ${cvr.spec.capacity} (${replica.bytes} bytes once rounded up to ${REPLICA_BLOCK_BYTES}) is smaller than ${what}`;
}

/** This CVR's replica on the pool: grown to its capacity, never shrunk. */
function planSize(
  { backend, imported }: ServingPool,
  cvr: CVR,
  replica: Replica,
  dataset: DatasetRecord,
): ReplicaStep {
  const size = backend.size(dataset);
  if (size !== undefined && size > replica.bytes) {
    return {
      state: {
        ...existingState(backend, replica, dataset, imported.readonly),
        phase: "Error",
        reason: "ShrinkRefused",
        message: `${smallerThan(cvr, replica, `replica ${replica.dataset} (${size} bytes)`)}: a replica is never shrunk; set the volume's capacity back to at least its size`,
      },
      actions: [],
    };
  }
  if (size === replica.bytes)
    return { state: existingState(backend, replica, dataset, imported.readonly), actions: [] };
  // Smaller, or its size not set yet: grown to the capacity.
  return {
    state:
      size === undefined
        ? {
            phase: "Init",
            reason: "Creating",
            message: `sizing replica ${replica.dataset} to ${replica.bytes} bytes (${backend.name})`,
          }
        : existingState(backend, replica, dataset, imported.readonly),
    actions: [
      {
        kind: "grow-replica",
        key: `grow-replica:${replica.dataset}:${replica.bytes}`,
        ...actionTarget(replica),
        bytes: replica.bytes,
        commands: backend.grow(replica, dataset),
      },
    ],
  };
}

function actionTarget(replica: Replica): { cvr: string; dataset: string } {
  return { cvr: replica.cvr, dataset: replica.dataset };
}

/** Why a dataset under the replica's name is not this CVR's replica; undefined when it is (adopted as is). */
function foreignProblem(
  backend: ReplicaBackend,
  replica: Replica,
  dataset: DatasetRecord,
): string | undefined {
  const expected: Record<string, string> = {
    type: backend.datasetType,
    [REPLICA_PROPERTY.volume]: replica.volume,
    [REPLICA_PROPERTY.replicaId]: replica.replicaId,
    [REPLICA_PROPERTY.cvr]: replica.cvr,
  };
  const wrong = Object.entries(expected).filter(
    ([property, value]) => dataset.properties[property] !== value,
  );
  if (wrong.length === 0) return undefined;
  const found = wrong
    .map(([property]) => `${property}=${dataset.properties[property] ?? "(unset)"}`)
    .join(", ");
  const wanted = wrong.map(([property, value]) => `${property}=${value}`).join(", ");
  return (
    `dataset ${replica.dataset} exists but is not this replica (${found}; expected ${wanted}): it is never adopted or overwritten. ` +
    `Rename or destroy it by hand if it is not needed, or delete this CStorVolumeReplica`
  );
}

function existingState(
  backend: ReplicaBackend,
  replica: Replica,
  dataset: DatasetRecord,
  readonly: boolean,
): ReplicaState {
  const capacity = { total: backend.size(dataset) ?? 0, used: bytesProperty(dataset, "used") ?? 0 };
  if (readonly) {
    return {
      phase: "Offline",
      reason: "PoolReadOnly",
      message: `pool of ${replica.dataset} is read-only (its roThresholdLimit is reached)`,
      capacity,
    };
  }
  return { phase: "Healthy", capacity };
}

/**
 * A CVR's status from its state: lastTransitionTime moves only when the phase or reason changes, so the same
 * pool gives the same status but for the heartbeat (lastUpdateTime).
 */
export function replicaStatus(cvr: CVR, state: ReplicaState, now: Date): CVRStatus {
  const previous = cvr.status ?? {};
  const time = formatTime(now);
  const moved =
    previous.phase !== state.phase || previous.reason !== state.reason || !previous.lastTransitionTime;
  const status: CVRStatus = {
    phase: state.phase,
    lastTransitionTime: moved ? time : previous.lastTransitionTime,
    lastUpdateTime: time,
  };
  if (state.reason !== undefined) status.reason = state.reason;
  if (state.message !== undefined) status.message = state.message;
  if (state.capacity)
    status.capacity = {
      total: exactQuantity(state.capacity.total),
      used: exactQuantity(state.capacity.used),
    };
  if (state.snapshots)
    status.snapshots = state.snapshots.map(({ name, creationTime, used }) => ({
      name,
      creationTime,
      ...(used !== undefined ? { used: exactQuantity(used) } : {}),
    }));
  if (cvr.metadata.generation !== undefined) status.observedGeneration = cvr.metadata.generation;
  return status;
}

const BINARY_SUFFIXES = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/** Bytes as a quantity that means exactly that many bytes: the largest binary suffix that divides them. */
export function exactQuantity(bytes: number): string {
  let value = Math.max(0, Math.round(bytes));
  let unit = 0;
  while (value !== 0 && value % 1024 === 0 && unit < BINARY_SUFFIXES.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value}${BINARY_SUFFIXES[unit]}`;
}
