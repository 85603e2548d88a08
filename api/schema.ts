// The one definition of the API. TypeScript types (api/types.ts), the validators (lib/request.ts,
// lib/rules/admission-shape.ts, node-daemon/validate.ts) and the CRD YAML under metacontroller/crds
// (scripts/generate-crds.ts) are all derived from these schemas.
//
// Schemas are closed (additionalProperties: false) so our own validation catches typos; the CRD generator
// drops that keyword because structural CRD schemas forbid it (the API server prunes unknown fields instead).
import { Type, type TSchema, type TUnsafe } from "@sinclair/typebox";
import {
  DEVICE_SET_RULES,
  POOL_RULES,
  RAID_GROUP_RULES,
  SPEC_RULES,
  VOLUME_CLAIM_TEMPLATE_RULES,
} from "./cel.js";
import { COMPRESSION_VALUES, LIMITS, RAID_TYPES, SCRUB_INTERVAL_PATTERN } from "./constants.js";

const closed = { additionalProperties: false } as const;

/** A Kubernetes int-or-string (quantities in resources). */
export const IntOrString: TUnsafe<string | number> = Type.Unsafe<string | number>({
  "x-kubernetes-int-or-string": true,
  anyOf: [{ type: "integer" }, { type: "string" }],
});

export const StringMap = (description: string) => Type.Record(Type.String(), Type.String(), { description });

export const ResourceRequirementsSchema = Type.Object(
  {
    limits: Type.Optional(Type.Record(Type.String(), IntOrString)),
    requests: Type.Optional(Type.Record(Type.String(), IntOrString)),
  },
  { ...closed, description: "Compute resources, as in a Pod container's resources." },
);

export const TolerationSchema = Type.Object(
  {
    key: Type.Optional(Type.String()),
    operator: Type.Optional(Type.Union([Type.Literal("Exists"), Type.Literal("Equal")])),
    value: Type.Optional(Type.String()),
    effect: Type.Optional(
      Type.Union([Type.Literal("NoSchedule"), Type.Literal("PreferNoSchedule"), Type.Literal("NoExecute")]),
    ),
    tolerationSeconds: Type.Optional(Type.Integer()),
  },
  closed,
);

const RaidTypeSchema = Type.Union(
  RAID_TYPES.map((t) => Type.Literal(t)),
  { description: "stripe, mirror, raidz or raidz2." },
);

export const PoolConfigSchema = Type.Object(
  {
    cacheFile: Type.Optional(
      Type.String({
        description: "Path of the zpool cachefile on the node, for faster imports. Empty: none.",
      }),
    ),
    defaultRaidGroupType: Type.Optional(RaidTypeSchema),
    overProvisioning: Type.Optional(
      Type.Boolean({ description: "Allow volumes to reserve more than the pool holds." }),
    ),
    compression: Type.Optional(
      Type.Union(
        COMPRESSION_VALUES.map((c) => Type.Literal(c)),
        { description: "ZFS compression of the pool's datasets. Default off." },
      ),
    ),
    resources: Type.Optional(ResourceRequirementsSchema),
    auxResources: Type.Optional(ResourceRequirementsSchema),
    tolerations: Type.Optional(Type.Array(TolerationSchema, { maxItems: 64 })),
    priorityClassName: Type.Optional(Type.String({ maxLength: 253 })),
    roThresholdLimit: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 100,
        description: "Used capacity (percent) at which the pool turns read-only. 100 never. Default 85.",
      }),
    ),
    scrub: Type.Optional(
      Type.Object(
        {
          interval: Type.String({
            pattern: SCRUB_INTERVAL_PATTERN,
            description:
              "How long after the pool's last scrub ended the node daemon scrubs it again: a whole number of hours or days, such as 168h or 30d.",
          }),
        },
        {
          ...closed,
          description:
            "Scheduled scrubs (docs/operations.md). Absent: the node daemon never scrubs the pool.",
        },
      ),
    ),
    existingPoolName: Type.Optional(
      Type.String({
        pattern: "^[A-Za-z][A-Za-z0-9_.:-]*$",
        maxLength: 255,
        description:
          "The zpool as another operator made it (cstor-<uid>): imported from the pool's devices and renamed cstor-<CSPI name>, never created over. Kept as the record of the old name (docs/migration.md).",
      }),
    ),
  },
  closed,
);

export const BlockDeviceRefSchema = Type.Object(
  {
    blockDeviceName: Type.String({
      minLength: 1,
      maxLength: 253,
      description: "Name of an NDM BlockDevice.",
    }),
    capacity: Type.Optional(
      Type.Integer({ minimum: 0, description: "Bytes. Filled in from the BlockDevice." }),
    ),
    devLink: Type.Optional(
      Type.String({ maxLength: 4096, description: "Device path. Filled in from the BlockDevice." }),
    ),
  },
  closed,
);

export const RaidGroupSchema = Type.Object(
  {
    type: Type.Optional(RaidTypeSchema),
    isWriteCache: Type.Optional(Type.Boolean({ description: "A ZFS log (write cache) group." })),
    isSpare: Type.Optional(Type.Boolean({ description: "Hot spares." })),
    isReadCache: Type.Optional(Type.Boolean({ description: "A ZFS cache (L2ARC, read cache) group." })),
    blockDevices: Type.Array(BlockDeviceRefSchema, {
      minItems: 1,
      maxItems: LIMITS.blockDevicesPerGroup,
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["blockDeviceName"],
    }),
  },
  {
    ...closed,
    "x-kubernetes-validations": RAID_GROUP_RULES,
  },
);

export const CLAIM_RETENTION = ["Retain", "Delete"] as const;
export const ACCESS_MODES = ["ReadWriteOnce", "ReadWriteOncePod", "ReadOnlyMany", "ReadWriteMany"] as const;

/** The PVC every index of a device set is made from: a PersistentVolumeClaim's metadata and spec, the parts a pool needs. */
export const VolumeClaimTemplateSchema = Type.Object(
  {
    metadata: Type.Optional(
      Type.Object(
        {
          labels: Type.Optional(StringMap("Copied onto each PVC.")),
          annotations: Type.Optional(StringMap("Copied onto each PVC.")),
        },
        closed,
      ),
    ),
    spec: Type.Object(
      {
        storageClassName: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 253,
            description: "Empty: the cluster's default StorageClass.",
          }),
        ),
        accessModes: Type.Optional(
          Type.Array(Type.Union(ACCESS_MODES.map((m) => Type.Literal(m))), {
            minItems: 1,
            maxItems: 4,
            description: "Default [ReadWriteOnce].",
          }),
        ),
        volumeMode: Type.Optional(
          Type.String({ maxLength: 16, description: "Must be Block: ZFS takes the raw device." }),
        ),
        resources: Type.Object(
          {
            requests: Type.Object(
              {
                storage: Type.String({
                  minLength: 1,
                  maxLength: 64,
                  description: "Size of each PVC, a quantity (10Gi).",
                }),
              },
              closed,
            ),
          },
          closed,
        ),
      },
      { ...closed, "x-kubernetes-validations": VOLUME_CLAIM_TEMPLATE_RULES },
    ),
  },
  closed,
);

export const DeviceSetSchema = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: LIMITS.deviceSetNameLength,
      pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
      description: "Names the set's PVCs (<cspc>-<name>-<index>); unique in the CSPC; never changes.",
    }),
    count: Type.Integer({
      minimum: 1,
      maximum: LIMITS.devicesPerSet,
      description: "PVCs in the set; only grows while the pool lives.",
    }),
    type: RaidTypeSchema,
    groupSize: Type.Integer({
      minimum: 1,
      maximum: LIMITS.blockDevicesPerGroup,
      description:
        "PVCs per raid group: the set's PVCs in index order, groupSize at a time, are its raid groups.",
    }),
    volumeClaimTemplate: VolumeClaimTemplateSchema,
    claimRetention: Type.Optional(
      Type.Union(
        CLAIM_RETENTION.map((r) => Type.Literal(r)),
        {
          description:
            "Retain (default): the PVCs outlive the pool and the CSPC until you delete them. Delete: they go with their pool.",
        },
      ),
    ),
  },
  { ...closed, "x-kubernetes-validations": DEVICE_SET_RULES },
);

export const PoolSpecSchema = Type.Object(
  {
    nodeSelector: Type.Optional(
      Type.Record(Type.String(), Type.String(), {
        minProperties: 1,
        description:
          "Labels that select exactly one node, e.g. kubernetes.io/hostname. Pools on block devices only.",
      }),
    ),
    raidGroups: Type.Optional(
      Type.Array(RaidGroupSchema, { minItems: 1, maxItems: LIMITS.raidGroupsPerPool }),
    ),
    deviceSets: Type.Optional(
      Type.Array(DeviceSetSchema, {
        minItems: 1,
        maxItems: LIMITS.deviceSetsPerPool,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        description:
          "Instead of raidGroups: the pool's devices as sets of block-mode PVCs; its node is where their PVs are.",
      }),
    ),
    poolConfig: Type.Optional(PoolConfigSchema),
  },
  {
    ...closed,
    "x-kubernetes-validations": POOL_RULES,
  },
);

export const ConditionSchema = Type.Object(
  {
    type: Type.String({ minLength: 1, maxLength: 316 }),
    status: Type.Union([Type.Literal("True"), Type.Literal("False"), Type.Literal("Unknown")]),
    reason: Type.String({ minLength: 1, maxLength: 1024 }),
    message: Type.String({ maxLength: 32768 }),
    lastTransitionTime: Type.String({ format: "date-time", description: "When status last changed." }),
    lastUpdateTime: Type.Optional(
      Type.String({ format: "date-time", description: "When status, reason or message last changed." }),
    ),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  closed,
);

export const Conditions = Type.Array(ConditionSchema, {
  maxItems: 32,
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["type"],
});

export const CSPCSpecSchema = Type.Object(
  {
    pools: Type.Array(PoolSpecSchema, { minItems: 1, maxItems: LIMITS.pools }),
  },
  { ...closed, "x-kubernetes-validations": SPEC_RULES },
);

/**
 * The CSPC's summary (lib/cspc/status.ts cspcPhase), first match wins: Deleting; Pending (no pool exists
 * yet); Provisioning (fewer pools than the spec lists); Blocked (the user must act: part of the spec is
 * refused, paused, unreadable, or a removed pool holds volumes); Changing (a day-2 change, a claim to bind or
 * a pool removal in flight); Degraded (a pool is not ONLINE with its pod available); Healthy.
 */
export const CSPC_PHASES = [
  "Pending",
  "Provisioning",
  "Changing",
  "Healthy",
  "Blocked",
  "Degraded",
  "Deleting",
] as const;

const PhaseTransitionTime = Type.Optional(
  Type.String({ format: "date-time", description: "When phase last changed." }),
);

export const CSPCStatusSchema = Type.Object(
  {
    phase: Type.Optional(Type.Union(CSPC_PHASES.map((p) => Type.Literal(p)))),
    phaseLastTransitionTime: PhaseTransitionTime,
    desiredInstances: Type.Optional(Type.Integer({ minimum: 0 })),
    provisionedInstances: Type.Optional(Type.Integer({ minimum: 0 })),
    healthyInstances: Type.Optional(Type.Integer({ minimum: 0 })),
    conditions: Type.Optional(Conditions),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  closed,
);

export const CSPI_PHASES = [
  "Pending",
  "ONLINE",
  "DEGRADED",
  "FAULTED",
  "OFFLINE",
  "UNAVAIL",
  "REMOVED",
  // The pool is ONLINE or DEGRADED on its node but its pool pod is not available (lib/cspi/phase.ts); named
  // apart from the zpool state UNAVAIL, which says the pool's devices cannot be opened.
  "PodUnavailable",
  "Exported",
  "Unknown",
  "Error",
] as const;

export const CSPIRaidGroupSchema = Type.Object(
  {
    type: RaidTypeSchema,
    isWriteCache: Type.Optional(Type.Boolean()),
    isSpare: Type.Optional(Type.Boolean()),
    isReadCache: Type.Optional(Type.Boolean()),
    blockDevices: Type.Array(BlockDeviceRefSchema, {
      minItems: 1,
      maxItems: LIMITS.blockDevicesPerGroup,
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["blockDeviceName"],
    }),
  },
  closed,
);

export const CSPISpecSchema = Type.Object(
  {
    hostName: Type.String({ minLength: 1, description: "The node's kubernetes.io/hostname label." }),
    nodeSelector: StringMap("Copied from the CSPC pool spec."),
    poolConfig: PoolConfigSchema,
    raidGroups: Type.Array(CSPIRaidGroupSchema, { minItems: 1, maxItems: LIMITS.raidGroupsPerPool }),
  },
  closed,
);

export const CapacitySchema = Type.Object(
  {
    total: Type.String(),
    free: Type.String(),
    used: Type.String(),
    snapshots: Type.Optional(
      Type.String({
        description:
          "Of used: what the replicas' snapshots alone hold (their usedbysnapshots, summed), freed once they are destroyed.",
      }),
    ),
  },
  { ...closed, description: "Kubernetes quantities (binary SI), as ZFS reports them." },
);

const ErrorCount = (what: string) =>
  Type.Integer({
    minimum: 0,
    description: `${what} errors ZFS counted since the pool was imported or last cleared (zpool clear resets them).`,
  });

export const DeviceHealthSchema = Type.Object(
  {
    blockDeviceName: Type.Optional(
      Type.String({
        maxLength: 253,
        description:
          "The CSPI's block device this pool member is; absent for a member the spec does not list.",
      }),
    ),
    devLink: Type.Optional(
      Type.String({ maxLength: 4096, description: "The block device's stable link (by-id), from the spec." }),
    ),
    path: Type.String({ maxLength: 4096, description: "The member as zpool status names it." }),
    section: Type.Union(
      ["data", "logs", "cache", "spares", "special", "dedup"].map((s) => Type.Literal(s)),
      {
        description: "Where the member sits: data vdevs, write cache (logs), read cache, spares.",
      },
    ),
    state: Type.String({
      description:
        "ONLINE, DEGRADED, FAULTED, OFFLINE, UNAVAIL, REMOVED (AVAIL, INUSE for spares), as zpool prints it.",
    }),
    readErrors: ErrorCount("Read"),
    writeErrors: ErrorCount("Write"),
    checksumErrors: ErrorCount("Checksum"),
    note: Type.Optional(
      Type.String({
        maxLength: 1024,
        description: "What zpool prints after the counts: cannot open, (resilvering)...",
      }),
    ),
  },
  closed,
);

export const SCRUB_STATES = ["Scrubbing", "Finished", "Canceled"] as const;

export const ScrubStatusSchema = Type.Object(
  {
    state: Type.Optional(
      Type.Union(
        SCRUB_STATES.map((s) => Type.Literal(s)),
        { description: "The pool's last scrub: running, finished, or stopped before the end." },
      ),
    ),
    lastStartTime: Type.Optional(
      Type.String({ format: "date-time", description: "When the last scrub started, when known." }),
    ),
    lastEndTime: Type.Optional(
      Type.String({
        format: "date-time",
        description: "When the last scrub finished or was stopped: the next is due an interval later.",
      }),
    ),
    progress: Type.Optional(
      Type.String({
        maxLength: 16,
        description: "How far the running scrub is, as zpool prints it (42.17%).",
      }),
    ),
    repairedBytes: Type.Optional(Type.Integer({ minimum: 0, description: "Bytes the last scrub repaired." })),
    errors: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: "Errors the last scrub found and could not repair (zpool status -v names the files).",
      }),
    ),
    waiting: Type.Optional(
      Type.String({ maxLength: 1024, description: "Why a scrub that is due has not started." }),
    ),
  },
  { ...closed, description: "Scheduled scrubs (poolConfig.scrub), from the node daemon." },
);

export const CSPIStatusSchema = Type.Object(
  {
    phase: Type.Optional(Type.Union(CSPI_PHASES.map((p) => Type.Literal(p)))),
    phaseLastTransitionTime: PhaseTransitionTime,
    capacity: Type.Optional(CapacitySchema),
    healthyReplicas: Type.Optional(Type.Integer({ minimum: 0 })),
    provisionedReplicas: Type.Optional(Type.Integer({ minimum: 0 })),
    readOnly: Type.Optional(Type.Boolean()),
    devices: Type.Optional(
      Type.Array(DeviceHealthSchema, {
        maxItems: LIMITS.raidGroupsPerPool * LIMITS.blockDevicesPerGroup,
        description:
          "Every device of the imported pool with its state and error counts (zpool status), from the node daemon.",
      }),
    ),
    scrub: Type.Optional(ScrubStatusSchema),
    conditions: Type.Optional(Conditions),
    lastUpdateTime: Type.Optional(
      Type.String({ format: "date-time", description: "Node daemon heartbeat." }),
    ),
    pendingRollout: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          "Hash of the pool pod template cspi-sync wants while the pod still runs another; the rollout permit names it.",
      }),
    ),
    poolName: Type.Optional(Type.String({ description: "The zpool's name on the node." })),
    importedOn: Type.Optional(
      Type.String({
        description: "Node that has the pool imported; empty once exported. The migration handshake.",
      }),
    ),
  },
  closed,
);

/** Only the parts of ObjectMeta this project reads or writes; the rest passes through untouched. */
export const ObjectMetaSchema = Type.Object(
  {
    name: Type.Optional(Type.String()),
    namespace: Type.Optional(Type.String()),
    uid: Type.Optional(Type.String()),
    generation: Type.Optional(Type.Integer()),
    resourceVersion: Type.Optional(Type.String()),
    creationTimestamp: Type.Optional(Type.String()),
    deletionTimestamp: Type.Optional(Type.String()),
    labels: Type.Optional(StringMap("labels")),
    annotations: Type.Optional(StringMap("annotations")),
    finalizers: Type.Optional(Type.Array(Type.String())),
    ownerReferences: Type.Optional(Type.Array(Type.Record(Type.String(), Type.Unknown()))),
  },
  { additionalProperties: true },
);

export const resource = <S extends TSchema, T extends TSchema>(kind: string, spec: S, status: T) =>
  Type.Object(
    {
      apiVersion: Type.String(),
      kind: Type.Literal(kind),
      metadata: ObjectMetaSchema,
      spec,
      status: Type.Optional(status),
    },
    { additionalProperties: true },
  );

export const CSPCSchema = resource("CStorPoolCluster", CSPCSpecSchema, CSPCStatusSchema);
export const CSPISchema = resource("CStorPoolInstance", CSPISpecSchema, CSPIStatusSchema);

// NDM's objects are inputs. Only the fields this project reads are described; the rest is preserved.
export const BlockDeviceSpecSchema = Type.Object(
  {
    path: Type.Optional(Type.String()),
    devlinks: Type.Optional(
      Type.Array(
        Type.Object({ kind: Type.Optional(Type.String()), links: Type.Optional(Type.Array(Type.String())) }),
      ),
    ),
    capacity: Type.Optional(Type.Object({ storage: Type.Optional(Type.Integer({ minimum: 0 })) })),
    filesystem: Type.Optional(
      Type.Object({ fsType: Type.Optional(Type.String()), mountPoint: Type.Optional(Type.String()) }),
    ),
    nodeAttributes: Type.Optional(Type.Object({ nodeName: Type.Optional(Type.String()) })),
    claimRef: Type.Optional(
      Type.Object({
        kind: Type.Optional(Type.String()),
        name: Type.Optional(Type.String()),
        namespace: Type.Optional(Type.String()),
        uid: Type.Optional(Type.String()),
      }),
    ),
  },
  { "x-kubernetes-preserve-unknown-fields": true },
);

export const BlockDeviceStatusSchema = Type.Object(
  {
    claimState: Type.Optional(Type.String()),
    state: Type.Optional(Type.String()),
  },
  { "x-kubernetes-preserve-unknown-fields": true },
);

export const BlockDeviceClaimSpecSchema = Type.Object(
  {
    blockDeviceName: Type.Optional(Type.String()),
    blockDeviceNodeAttributes: Type.Optional(
      Type.Object({ nodeName: Type.Optional(Type.String()), hostName: Type.Optional(Type.String()) }),
    ),
    resources: Type.Optional(
      Type.Object({ requests: Type.Optional(Type.Record(Type.String(), IntOrString)) }),
    ),
  },
  { "x-kubernetes-preserve-unknown-fields": true },
);

export const BlockDeviceClaimStatusSchema = Type.Object(
  { phase: Type.Optional(Type.String()) },
  { "x-kubernetes-preserve-unknown-fields": true },
);

export const BlockDeviceSchema = resource("BlockDevice", BlockDeviceSpecSchema, BlockDeviceStatusSchema);
export const BlockDeviceClaimSchema = resource(
  "BlockDeviceClaim",
  BlockDeviceClaimSpecSchema,
  BlockDeviceClaimStatusSchema,
);
