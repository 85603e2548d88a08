// Names that other components, users and existing OpenEBS tooling recognise. One place for all of them.

export const GROUP = "openebs.io";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;

export const KIND = {
  cspc: "CStorPoolCluster",
  cspi: "CStorPoolInstance",
  blockDevice: "BlockDevice",
  blockDeviceClaim: "BlockDeviceClaim",
  deployment: "Deployment",
  node: "Node",
  cvc: "CStorVolumeConfig",
  cv: "CStorVolume",
  cvr: "CStorVolumeReplica",
  cvsnap: "CStorVolumeSnapshot",
  service: "Service",
  secret: "Secret",
  podDisruptionBudget: "PodDisruptionBudget",
  persistentVolumeClaim: "PersistentVolumeClaim",
  persistentVolume: "PersistentVolume",
  namespace: "Namespace",
  event: "Event",
  lease: "Lease",
} as const;

/** Metacontroller v2 object-map keys: "<Kind>.<group>/<version>", core group "<Kind>.<version>". */
export const TYPE_KEY = {
  cspc: `${KIND.cspc}.${API_VERSION}`,
  cspi: `${KIND.cspi}.${API_VERSION}`,
  blockDevice: `${KIND.blockDevice}.${API_VERSION}`,
  blockDeviceClaim: `${KIND.blockDeviceClaim}.${API_VERSION}`,
  deployment: "Deployment.apps/v1",
  node: "Node.v1",
  cvc: `${KIND.cvc}.${API_VERSION}`,
  cv: `${KIND.cv}.${API_VERSION}`,
  cvr: `${KIND.cvr}.${API_VERSION}`,
  cvsnap: `${KIND.cvsnap}.${API_VERSION}`,
  service: "Service.v1",
  secret: "Secret.v1",
  podDisruptionBudget: "PodDisruptionBudget.policy/v1",
  persistentVolumeClaim: "PersistentVolumeClaim.v1",
  persistentVolume: "PersistentVolume.v1",
  namespace: "Namespace.v1",
  lease: "Lease.coordination.k8s.io/v1",
} as const;

export const LABEL = {
  cspc: "openebs.io/cstor-pool-cluster",
  cspi: "openebs.io/cstor-pool-instance",
  hostname: "kubernetes.io/hostname",
  app: "app.kubernetes.io/name",
  component: "app.kubernetes.io/component",
  managedBy: "app.kubernetes.io/managed-by",
  /** On a CStorVolumeReplica: the CStorPoolInstance that holds it (upstream cStor's label). */
  replicaPool: "cstorpoolinstance.openebs.io/name",
  /**
   * On a CStorVolumeReplica and the volume's other children: the volume (upstream cStor's labels). Also on a
   * CStorVolumeSnapshot, set by the CSI controller: the volume's target lists its snapshots by it.
   */
  replicaVolume: "cstorvolume.openebs.io/name",
  persistentVolume: "openebs.io/persistent-volume",
  /** On a device set's PVC: the set's name and the PVC's index in it (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md). */
  deviceSet: "openebs.io/device-set",
  deviceSetIndex: "openebs.io/device-set-index",
  /** On a CSPI of a pool on device sets: "true". Its devices are PVCs, never BlockDevices with claims. */
  onDeviceSets: "openebs.io/on-device-sets",
} as const;

export const ANNOTATION = {
  /** On a replacement device's claim: the device it replaces. The node daemon removes it after resilver. */
  bdPredecessor: "openebs.io/bd-predecessor",
  /**
   * On the claim of a spare or read cache device removed from the spec: the device path the node daemon
   * removes from the pool (zpool remove). The daemon removes the annotation once the pool no longer has
   * the device; only then does cspc-sync release the claim.
   */
  bdRemoval: "openebs.io/bd-removal",
  /**
   * On a CSPI: the index of its pool in the CSPC's spec.pools when cspc-sync last wrote it. The CSPC admission
   * policy looks for the CSPI's pool there first, so an edit costs it the CSPC's size, not its square
   * (docs/adr/0046-the-cspc-policy-finds-a-cspis-pool-by-a-recorded-index.md). Only a hint: the policy checks it.
   */
  poolIndex: "openebs.io/pool-index",
  /** On a CSPI: the pool spec is gone from the CSPC; the node daemon may destroy the pool. */
  poolRemoval: "openebs.io/pool-removal",
  /** On a CSPC: hold all day-2 changes. */
  reconcilePaused: "openebs.io/reconcile-paused",
  /** On a CSPI: import even though the node that held the pool has not exported it (that node is dead). */
  forceImport: "openebs.io/force-import",
  /** On a CSPI: let zpool create/add use -f (the user has checked the devices by hand). */
  forceCreate: "openebs.io/force-create",
  /** Metacontroller's own bookkeeping: never part of desired state. */
  metacontrollerLastApplied: "metacontroller.k8s.io/last-applied-configuration",
  metacontrollerDecorator: "metacontroller.k8s.io/decorator-controller",
  /** On a CStorVolumeReplica: the node of its pool, for people reading it (upstream cStor's annotation). */
  replicaPoolHost: "cstorpoolinstance.openebs.io/hostname",
  /**
   * On a deleted CStorVolumeReplica whose pool is gone for good: "confirm" lets a node daemon remove its
   * finalizer without destroying the replica (docs/operations.md).
   */
  replicaLost: "openebs.io/replica-lost",
  /**
   * On a CSPI: cspi-sync may roll the pool pod to the template with this hash. cspc-sync grants it to one pool
   * of a CSPC at a time (docs/adr/0028-pool-pod-rollouts-go-one-pool-at-a-time.md).
   */
  rolloutPermit: "openebs.io/rollout-permit",
  /**
   * On a CStorVolumeReplica cvc-sync added to a volume that already had data (scale-up, a move, a lost
   * replica's replacement): when it was added (RFC 3339). Removed by cvc-sync once the replica caught up.
   */
  rebuildingSince: "openebs.io/rebuilding-since",
  /** On a rebuilding CStorVolumeReplica: "true" once the target copied the volume's data into it (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md). */
  replicaCaughtUp: "openebs.io/replica-caught-up",
  /**
   * On a CStorVolumeReplica, written by the volume's target while it holds the volume's writes: the snapshot the
   * replica's pool is to take now (docs/adr/0050-a-snapshot-is-taken-while-md-holds-the-volumes-writes.md).
   */
  snapshotNow: "cstor.openebs.io/snapshot-now",
  /** On a CStorVolumeReplica, kept by the volume's target: the snapshots that must exist, comma-separated. */
  replicaSnapshots: "cstor.openebs.io/snapshots",
} as const;

export const REPLICA_LOST_CONFIRM = "confirm";

export const POOL_REMOVAL_REQUESTED = "requested";

/** The CSI driver (docs/adr/0047-the-csi-driver-one-writer-per-volume.md). */
export const CSI = {
  /** The CSIDriver's name: not upstream cStor's cstor.csi.openebs.io, so the two never claim one object. */
  driverName: "cstor-pool-operator.csi.openebs.io",
  /**
   * On a CStorVolume: the one node whose initiator the LUN admits, written by the driver's
   * ControllerPublishVolume; empty, nobody; absent, the volume's client initiator (volumes made before the driver).
   */
  publishedNodeAnnotation: "cstor.openebs.io/published-node",
  /**
   * On a CStorVolumeConfig or CStorVolumeSnapshot the driver made: the CSI name it was made for (CreateVolume's
   * and CreateSnapshot's idempotency key).
   */
  nameAnnotation: "cstor.openebs.io/csi-name",
  /** On a CStorVolumeConfig the driver made: the claim it serves, "<namespace>/<name>", for people reading it. */
  claimAnnotation: "cstor.openebs.io/claim",
  /** On a CStorVolumeSnapshot: the VolumeSnapshot it serves, "<namespace>/<name>", for people reading it. */
  volumeSnapshotAnnotation: "cstor.openebs.io/volume-snapshot",
  /**
   * On a CStorVolumeSnapshot the driver took to clone a volume (docs/adr/0055-a-restore-clones-where-the-snapshot-is.md):
   * the clone's volume id. It is the clone's, not a user's: not listed, and deleted with the clone.
   */
  cloneVolumeAnnotation: "cstor.openebs.io/clone-volume",
  /** volume_context keys: the target's portal and IQN, the LUN the array is served at. */
  contextKeys: { targetPortal: "targetPortal", iqn: "iqn", lun: "lun" },
} as const;

/** CSPI condition types. PodAvailable and NodeDaemonHeartbeat belong to cspi-sync, the rest to the node daemon. */
export const CSPI_CONDITION = {
  podAvailable: "PodAvailable",
  heartbeat: "NodeDaemonHeartbeat",
  poolExpansion: "PoolExpansion",
  diskReplacement: "DiskReplacement",
  diskUnavailable: "DiskUnavailable",
  poolLost: "PoolLost",
  /** The node daemon's: a removed pool it will not destroy (it still holds data); cspc-sync names it on the CSPC. */
  poolDestroyBlocked: "PoolDestroyBlocked",
  /** cspi-sync's: the pool pod's template differs from the wanted one; Waiting, Permitted or RolledOut. */
  rolloutPending: "RolloutPending",
} as const;

export const FINALIZER = {
  /** The node daemon's: the pool is still imported (or not yet destroyed) on the node. */
  poolProtection: "openebs.io/pool-protection",
  /** The node daemon's: the replica's data is still on its pool. Removed once the replica is destroyed. */
  replicaProtection: "cstorvolumereplica.openebs.io/finalizer",
  /** The volume target's, on a CStorVolumeSnapshot: some replica's pool still holds the ZFS snapshot. */
  replicaSnapshots: "cstor.openebs.io/replica-snapshots",
} as const;

/** Metacontroller adds this label to every child when generateSelector is on. */
export const METACONTROLLER_CONTROLLER_UID_LABEL = "controller-uid";

export const RAID_TYPES = ["stripe", "mirror", "raidz", "raidz2"] as const;
export type RaidType = (typeof RAID_TYPES)[number];

export const COMPRESSION_VALUES = ["off", "on", "lz4", "lzjb", "gzip", "zle"] as const;
export type Compression = (typeof COMPRESSION_VALUES)[number];

/** poolConfig.scrub.interval: whole hours or days (docs/adr/0034-scrubs-an-interval-in-poolconfig-decided.md). */
export const SCRUB_INTERVAL_PATTERN = "^[1-9][0-9]{0,3}[hd]$";

export const DEFAULTS = {
  compression: "off" as Compression,
  roThresholdLimit: 85,
  /** How long a node daemon heartbeat stays fresh before the hook marks the CSPI phase Unknown. */
  staleStatusSeconds: 300,
  /** Resync so that time-based decisions (stale heartbeats) are re-evaluated without an event. */
  resyncSeconds: 60,
  /**
   * Resync while what a decorator answered (a CSPI's pool Deployment, a CSPI's or a CStorVolume's status) is
   * not yet what it observes: Metacontroller's decorator gives a sync up on a conflict, and the status-only
   * write that beat it (the node daemon's, the target agent's) triggers no other sync
   * (docs/adr/0015-cspi-sync-asks-for-a-short-resync-until-its-pool.md, docs/adr/0042-a-decorator-asks-for-a-short-resync-until-its-status.md).
   */
  confirmResyncSeconds: 5,
};

/**
 * ZFS's smallest device (SPA_MINDEVSIZE, 64 MiB): `zpool create`/`add` refuse a smaller one with "one or more
 * devices is less than the minimum size (64M)". Checked where device sizes are known: BlockDevice capacity
 * (placement rules) and the node's own view of the device (node daemon).
 */
export const ZFS_MIN_DEVICE_BYTES = 64 * 1024 * 1024;

/** A DNS-1123 subdomain, the name most kinds take; JavaScript and CEL's RE2 read the pattern alike. */
export const DNS_SUBDOMAIN_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/** Upper bounds that keep CEL rule cost bounded and objects well under etcd's size limit. */
export const LIMITS = {
  pools: 1000,
  raidGroupsPerPool: 32,
  blockDevicesPerGroup: 64,
  /**
   * Block devices of all pools together. What bounds a CSPC's hook request (each device brings a claim, a
   * BlockDevice and a CSPI entry): the hook server's body limit is derived from it (docs/reliability.md).
   */
  blockDevicesPerCspc: 4096,
  cspcNameLength: 56,
  /** Device sets of one pool, and PVCs of one set (the raid groups they make count against raidGroupsPerPool). */
  deviceSetsPerPool: 4,
  devicesPerSet: 256,
  deviceSetNameLength: 40,
  replicasPerVolume: 5,
  /** Snapshots one volume keeps: each is a ZFS snapshot on every replica's pool, listed in each replica's status. */
  maxSnapshotsPerVolume: 128,
};
