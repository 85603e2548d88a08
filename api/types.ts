// TypeScript types derived from the schemas (api/schema.ts), plus the Metacontroller v2 hook wire types.
import type { Static } from "@sinclair/typebox";
import type {
  BlockDeviceClaimSchema,
  BlockDeviceRefSchema,
  BlockDeviceSchema,
  ConditionSchema,
  CSPCSchema,
  CSPCSpecSchema,
  CSPCStatusSchema,
  CSPIRaidGroupSchema,
  CSPISchema,
  DeviceHealthSchema,
  CSPISpecSchema,
  CSPIStatusSchema,
  DeviceSetSchema,
  ObjectMetaSchema,
  PoolConfigSchema,
  PoolSpecSchema,
  RaidGroupSchema,
} from "./schema.js";
import type {
  CVCSchema,
  CVCSpecSchema,
  CVCStatusSchema,
  CVRSchema,
  CVRSpecSchema,
  CVRStatusSchema,
  CVSchema,
  CVSpecSchema,
  CVStatusSchema,
  CVSnapSchema,
  CVSnapSpecSchema,
  CVSnapStatusSchema,
  ReplicaSnapshotSchema,
  SkippedPoolSchema,
} from "./volume-schema.js";

export type ObjectMeta = Static<typeof ObjectMetaSchema>;
export type Condition = Static<typeof ConditionSchema>;
export type PoolConfig = Static<typeof PoolConfigSchema>;
export type BlockDeviceRef = Static<typeof BlockDeviceRefSchema>;
export type RaidGroup = Static<typeof RaidGroupSchema>;
export type PoolSpec = Static<typeof PoolSpecSchema>;
export type DeviceSet = Static<typeof DeviceSetSchema>;
/** A pool on block devices, or a pool on device sets lowered to one (lib/cspc/device-sets.ts): what the planner builds from. */
export type BlockPoolSpec = PoolSpec & { nodeSelector: Record<string, string>; raidGroups: RaidGroup[] };
export type CSPCSpec = Static<typeof CSPCSpecSchema>;
export type CSPCStatus = Static<typeof CSPCStatusSchema>;
export type CSPC = Static<typeof CSPCSchema>;
export type CSPIRaidGroup = Static<typeof CSPIRaidGroupSchema>;
export type CSPISpec = Static<typeof CSPISpecSchema>;
export type CSPIStatus = Static<typeof CSPIStatusSchema>;
export type DeviceHealth = Static<typeof DeviceHealthSchema>;
export type CSPI = Static<typeof CSPISchema>;
export type BlockDevice = Static<typeof BlockDeviceSchema>;
export type BlockDeviceClaim = Static<typeof BlockDeviceClaimSchema>;
export type CVCSpec = Static<typeof CVCSpecSchema>;
export type CVCStatus = Static<typeof CVCStatusSchema>;
export type CVC = Static<typeof CVCSchema>;
export type CVSpec = Static<typeof CVSpecSchema>;
export type CVStatus = Static<typeof CVStatusSchema>;
export type CVTargetStatus = NonNullable<CVStatus["target"]>;
export type CV = Static<typeof CVSchema>;
export type CVRSpec = Static<typeof CVRSpecSchema>;
export type CVRStatus = Static<typeof CVRStatusSchema>;
export type CVR = Static<typeof CVRSchema>;
export type ReplicaSnapshot = Static<typeof ReplicaSnapshotSchema>;
export type CVSnapSpec = Static<typeof CVSnapSpecSchema>;
export type CVSnapStatus = Static<typeof CVSnapStatusSchema>;
export type CVSnap = Static<typeof CVSnapSchema>;
export type SkippedPool = Static<typeof SkippedPoolSchema>;

/** Any Kubernetes object as it travels in JSON. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** Metacontroller v2: type key ("Kind.group/version") → object key ("namespace/name") → object. */
export type ObjectMap = Record<string, Record<string, KubeObject>>;

/** An object of a hook request that the hooks cannot use (a field they need is missing or of the wrong type). */
export interface UnreadableObject {
  /** Where the request had it. */
  field: "children" | "attachments" | "related";
  /** Metacontroller's type key: "Kind.group/version". */
  typeKey: string;
  object: KubeObject;
  /** The field and what is wrong with it: "spec.capacity.storage must be of type integer". */
  problem: string;
}

/** A composite sync request; `P` is what request parsing proved the parent to be. */
export interface CompositeSyncRequest<P = KubeObject> {
  controller: KubeObject;
  parent: P;
  children: ObjectMap;
  related: ObjectMap;
  finalizing: boolean;
  /** Children and related objects left out of `children` and `related` because the hooks cannot use them. */
  unreadable?: UnreadableObject[];
}

export interface CompositeSyncResponse {
  status: Record<string, unknown>;
  children: KubeObject[];
  resyncAfterSeconds?: number;
  finalized?: boolean;
}

/** A decorator sync request; `O` is what request parsing proved the object to be. */
export interface DecoratorSyncRequest<O = KubeObject> {
  controller: KubeObject;
  object: O;
  attachments: ObjectMap;
  related: ObjectMap;
  finalizing: boolean;
  /** Attachments and related objects left out because the hooks cannot use them. */
  unreadable?: UnreadableObject[];
}

export interface DecoratorSyncResponse {
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
  status?: Record<string, unknown> | null;
  attachments: KubeObject[];
  resyncAfterSeconds?: number;
  finalized?: boolean;
}

export interface CustomizeRequest {
  controller: KubeObject;
  /**
   * Customize answers from the parent's metadata and, at most, a spec field it reads tolerantly: only the
   * metadata is checked, every other field is as sent.
   */
  parent: { kind: string; metadata: ObjectMeta; [field: string]: unknown };
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
}

export interface RelatedResourceRule {
  apiVersion: string;
  resource: string;
  namespace?: string;
  labelSelector?: LabelSelector;
  names?: string[];
}

export interface CustomizeResponse {
  relatedResources: RelatedResourceRule[];
}

/** The hooks' only source of time: injected so that the same request always gives the same answer. */
export type Clock = () => Date;
