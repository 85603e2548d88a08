// The volume half of the API: a CStorVolumeConfig (what a user asks for) and the two objects the cvc-sync
// hook makes from it, the CStorVolume (the target's view) and one CStorVolumeReplica per chosen pool (the
// pool's view). All three live in the namespace of the CStorPoolCluster they use. Field names follow
// upstream cStor's v1 objects where upstream's meaning is kept, so its users recognise them.
import { Type } from "@sinclair/typebox";
import { CVC_SPEC_RULES } from "./cel.js";
import { LIMITS } from "./constants.js";
import { Conditions, resource, ResourceRequirementsSchema, StringMap, TolerationSchema } from "./schema.js";

const closed = { additionalProperties: false } as const;

/** A capacity as a Kubernetes quantity string ("10Gi"), the form users write and kubectl prints. */
const Quantity = (description: string) =>
  Type.String({
    minLength: 1,
    maxLength: 64,
    pattern: "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$",
    description,
  });

const ObjectName = (description: string) => Type.String({ minLength: 1, maxLength: 253, description });

export const VolumeTargetSpecSchema = Type.Object(
  {
    resources: Type.Optional(ResourceRequirementsSchema),
    tolerations: Type.Optional(Type.Array(TolerationSchema, { maxItems: 64 })),
    /** A Pod affinity, as in a Pod spec; passed through to the target Deployment unchanged. */
    affinity: Type.Optional(
      Type.Object({}, { additionalProperties: true, "x-kubernetes-preserve-unknown-fields": true }),
    ),
    nodeSelector: Type.Optional(StringMap("Node labels the target pod must run on.")),
    priorityClassName: Type.Optional(Type.String({ maxLength: 253 })),
  },
  { ...closed, description: "Scheduling and resources of the volume's target pod." },
);

const VolumeName = (description: string) =>
  Type.String({ minLength: 1, maxLength: 63, pattern: "^[a-z]([-a-z0-9]*[a-z0-9])?$", description });

/** A new volume's data: a snapshot of another volume (docs/adr/0055-a-restore-clones-where-the-snapshot-is.md). */
export const VolumeSourceSchema = Type.Object(
  {
    snapshot: ObjectName("The CStorVolumeSnapshot whose data the volume starts with (same namespace)."),
    volume: VolumeName("The CStorVolumeConfig the snapshot was taken of."),
  },
  {
    ...closed,
    description:
      "Where the volume's data comes from: a snapshot of another volume on the same CStorPoolCluster. Cannot change.",
  },
);

export const CVCSpecSchema = Type.Object(
  {
    capacity: Quantity("Size of the volume. It can grow, never shrink."),
    cstorPoolCluster: ObjectName("The CStorPoolCluster whose pools hold the replicas (same namespace)."),
    replicaCount: Type.Integer({
      minimum: 1,
      maximum: LIMITS.replicasPerVolume,
      description: "Number of replicas.",
    }),
    pinnedPools: Type.Optional(
      Type.Array(ObjectName("A CStorPoolInstance name."), {
        maxItems: LIMITS.replicasPerVolume,
        description:
          "Pools that must hold the replicas (CStorPoolInstance names). Empty: chosen by placement.",
      }),
    ),
    target: Type.Optional(VolumeTargetSpecSchema),
    source: Type.Optional(VolumeSourceSchema),
  },
  { ...closed, "x-kubernetes-validations": CVC_SPEC_RULES },
);

export const CVC_PHASES = ["Pending", "Bound", "Failed"] as const;

export const SkippedPoolSchema = Type.Object(
  {
    name: Type.String({ description: "The CStorPoolInstance." }),
    node: Type.Optional(Type.String()),
    reason: Type.String({
      description: "Machine-readable, e.g. NotOnline, ReadOnly, PodUnavailable, NoCapacity.",
    }),
    message: Type.String(),
  },
  closed,
);

export const CVCStatusSchema = Type.Object(
  {
    phase: Type.Optional(Type.Union(CVC_PHASES.map((p) => Type.Literal(p)))),
    reason: Type.Optional(Type.String({ description: "Why the volume is Pending or Failed." })),
    pools: Type.Optional(
      Type.Array(Type.String(), {
        maxItems: LIMITS.replicasPerVolume + 1,
        description: "Pools holding a replica now (one more than replicaCount while a replica moves).",
      }),
    ),
    rebuildingReplicas: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({ description: "The CStorVolumeReplica." }),
            pool: Type.String({ description: "Its CStorPoolInstance." }),
            since: Type.String({ description: "When it was added (RFC 3339)." }),
          },
          closed,
        ),
        {
          maxItems: LIMITS.replicasPerVolume + 1,
          description:
            "Replicas added to a volume that has data, until the target confirms they caught up (docs/volumes.md).",
        },
      ),
    ),
    replicasToMove: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: "Replicas still on pools marked for removal; absent when none.",
      }),
    ),
    capacity: Type.Optional(Type.String({ description: "The capacity every replica has reached." })),
    restore: Type.Optional(
      Type.Object(
        {
          snapshot: Type.String({ description: "spec.source.snapshot." }),
          clonedPools: Type.Array(Type.String(), {
            maxItems: LIMITS.replicasPerVolume,
            description: "Pools whose replica is a ZFS clone of the snapshot: no data copied.",
          }),
          copiedPools: Type.Array(Type.String(), {
            maxItems: LIMITS.replicasPerVolume,
            description: "Pools that do not hold the snapshot: their replica is copied by the target's md.",
          }),
        },
        { ...closed, description: "How a volume with spec.source got its data: placement's choice." },
      ),
    ),
    skippedPools: Type.Optional(
      Type.Array(SkippedPoolSchema, {
        maxItems: LIMITS.pools,
        description: "While no placement exists: every pool considered and why it was not chosen.",
      }),
    ),
    conditions: Type.Optional(Conditions),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  closed,
);

export const CV_PHASES = ["Init", "Healthy", "Degraded", "Offline", "Error"] as const;

export const CVSpecSchema = Type.Object(
  {
    capacity: Quantity("Size of the LUN the target serves."),
    targetIP: Type.Optional(Type.String({ description: "The target Service's ClusterIP." })),
    targetPort: Type.String({ description: "The iSCSI port, 3260." }),
    targetPortal: Type.Optional(Type.String({ description: "<targetIP>:<targetPort>." })),
    iqn: Type.String({ description: "The iSCSI qualified name of the volume's LUN." }),
    replicationFactor: Type.Integer({
      minimum: 1,
      maximum: LIMITS.replicasPerVolume + 1,
      description:
        "Replicas that are not rebuilding (one more than desiredReplicationFactor while a replica moves).",
    }),
    consistencyFactor: Type.Integer({
      minimum: 1,
      maximum: LIMITS.replicasPerVolume + 1,
      description: "Replicas that must hold a write: replicationFactor/2 + 1.",
    }),
    desiredReplicationFactor: Type.Integer({ minimum: 1, maximum: LIMITS.replicasPerVolume }),
    source: Type.Optional(
      Type.Object(
        {
          snapshot: Type.String({ description: "The CStorVolumeSnapshot the volume is restored from." }),
          clonedReplicas: Type.Array(Type.String(), {
            minItems: 1,
            maxItems: LIMITS.replicasPerVolume,
            description:
              "Replica ids whose replica is a clone of the snapshot: the target's first array is assembled from them, the others are copied.",
          }),
        },
        closed,
      ),
    ),
    replicaDetails: Type.Optional(
      Type.Object(
        {
          knownReplicas: Type.Optional(
            Type.Record(Type.String(), Type.String(), { description: "Replica id -> CStorPoolInstance." }),
          ),
        },
        closed,
      ),
    ),
  },
  closed,
);

export const TARGET_STATES = ["Starting", "Serving", "ReadOnly", "Refused", "Stopped"] as const;
export const TARGET_REPLICA_STATES = ["InSync", "Rebuilding", "Degraded", "Offline"] as const;

/** What the volume target agent sees, written by the agent alone (docs/adr/0040-the-target-agent-credentials-names-and-status.md). */
export const CVTargetStatusSchema = Type.Object(
  {
    state: Type.Union(
      TARGET_STATES.map((s) => Type.Literal(s)),
      {
        description:
          "Serving: the LUN is writable. ReadOnly: fewer replicas in sync than the consistency factor, writes refused. Refused: the agent will not serve (message says which replicas and why). Starting, Stopped: before and after serving.",
      },
    ),
    message: Type.Optional(Type.String({ maxLength: 4096 })),
    node: Type.Optional(Type.String({ description: "The node the target runs on." })),
    arrayUUID: Type.Optional(
      Type.String({
        description: "The md array's UUID, written once the array was created: never create it again.",
      }),
    ),
    arraySizeBytes: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          "The md array's size in bytes while it is assembled: what the LUN serves. It follows spec.capacity once every replica serves that size.",
      }),
    ),
    initiators: Type.Optional(
      Type.Array(Type.String({ maxLength: 223 }), {
        maxItems: 4,
        description:
          "While the LUN is served: the iSCSI initiators it admits. The node the volume is published to (annotation cstor.openebs.io/published-node), none while it is published nowhere, or the volume's client initiator when it never was.",
      }),
    ),
    lastTransitionTime: Type.Optional(Type.String({ description: "When state last changed (RFC 3339)." })),
    replicas: Type.Optional(
      Type.Array(
        Type.Object(
          {
            replicaId: Type.String(),
            pool: Type.String({ description: "The CStorPoolInstance holding the replica." }),
            state: Type.Union(TARGET_REPLICA_STATES.map((s) => Type.Literal(s))),
            rebuildPercent: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
            message: Type.Optional(Type.String({ maxLength: 1024 })),
          },
          closed,
        ),
        { maxItems: 16 },
      ),
    ),
  },
  closed,
);

export const CVStatusSchema = Type.Object(
  {
    target: Type.Optional(CVTargetStatusSchema),
    phase: Type.Optional(Type.Union(CV_PHASES.map((p) => Type.Literal(p)))),
    healthyReplicas: Type.Optional(Type.Integer({ minimum: 0 })),
    capacity: Type.Optional(Type.String()),
    conditions: Type.Optional(Conditions),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  closed,
);

export const CVR_PHASES = ["Init", "Healthy", "Offline", "Error"] as const;

/** One ZFS snapshot of a replica, as its pool's node daemon saw it. */
export const ReplicaSnapshotSchema = Type.Object(
  {
    name: ObjectName("The CStorVolumeSnapshot's name: the ZFS snapshot is <replica dataset>@<name>."),
    creationTime: Type.String({ format: "date-time", description: "When the pool took it." }),
    used: Type.Optional(Quantity("Space only this snapshot holds on the pool.")),
  },
  closed,
);

export const CVRSpecSchema = Type.Object(
  {
    capacity: Quantity("Size of the replica on its pool. Grows with the volume."),
    replicaId: Type.String({ minLength: 1, maxLength: 64, description: "Stable id of this replica." }),
    targetIP: Type.Optional(Type.String({ description: "The volume target's ClusterIP." })),
    source: Type.Optional(
      Type.Object(
        {
          replica: ObjectName("The CStorVolumeReplica, on the same pool, whose ZFS snapshot is cloned."),
          snapshot: ObjectName(
            "The snapshot's name: the replica is `zfs clone <replica dataset>@<snapshot>`.",
          ),
        },
        { ...closed, description: "Set only at creation: the replica starts as a clone. Cannot change." },
      ),
    ),
  },
  closed,
);

export const CVRStatusSchema = Type.Object(
  {
    phase: Type.Optional(Type.Union(CVR_PHASES.map((p) => Type.Literal(p)))),
    reason: Type.Optional(Type.String()),
    message: Type.Optional(Type.String({ maxLength: 32768 })),
    capacity: Type.Optional(
      Type.Object(
        {
          total: Type.String({ description: "The replica's size on the pool (a quantity)." }),
          used: Type.String({ description: "Space the replica uses on the pool (a quantity)." }),
        },
        closed,
      ),
    ),
    lastTransitionTime: Type.Optional(Type.String({ format: "date-time" })),
    lastUpdateTime: Type.Optional(Type.String({ format: "date-time" })),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
    snapshots: Type.Optional(
      Type.Array(ReplicaSnapshotSchema, {
        maxItems: LIMITS.maxSnapshotsPerVolume,
        description:
          "The ZFS snapshots of this replica its pool holds, written by the pool's node daemon (docs/adr/0050-a-snapshot-is-taken-while-md-holds-the-volumes-writes.md).",
      }),
    ),
  },
  closed,
);

export const CVSNAP_PHASES = ["Pending", "Holding", "ReadyToUse", "Failed"] as const;

export const CVSnapSpecSchema = Type.Object(
  {
    volume: VolumeName("The CStorVolumeConfig (the volume) this is a snapshot of, in the same namespace."),
  },
  closed,
);

export const CVSnapStatusSchema = Type.Object(
  {
    phase: Type.Optional(Type.Union(CVSNAP_PHASES.map((p) => Type.Literal(p)))),
    creationTime: Type.Optional(
      Type.String({ format: "date-time", description: "The instant the volume's writes were held." }),
    ),
    restoreSize: Type.Optional(Quantity("The volume's size when the snapshot was taken.")),
    replicas: Type.Optional(
      Type.Array(ObjectName("A CStorVolumeReplica whose pool holds the snapshot."), { maxItems: 16 }),
    ),
    holdMilliseconds: Type.Optional(
      Type.Integer({ minimum: 0, description: "How long the volume's writes were held." }),
    ),
    reason: Type.Optional(Type.String({ maxLength: 256 })),
    message: Type.Optional(Type.String({ maxLength: 32768 })),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
    attempts: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          "Attempts the volume's target made to take it: holds, and refusals of a degraded volume.",
      }),
    ),
    nextAttemptTime: Type.Optional(
      Type.String({
        format: "date-time",
        description:
          "While Failed: when the target tries again (docs/adr/0054-the-targets-snapshot-pass-one-at-a-time-a-bound-kept-by-a-timer.md).",
      }),
    ),
  },
  closed,
);

export const CVCSchema = resource("CStorVolumeConfig", CVCSpecSchema, CVCStatusSchema);
export const CVSchema = resource("CStorVolume", CVSpecSchema, CVStatusSchema);
export const CVRSchema = resource("CStorVolumeReplica", CVRSpecSchema, CVRStatusSchema);
export const CVSnapSchema = resource("CStorVolumeSnapshot", CVSnapSpecSchema, CVSnapStatusSchema);
