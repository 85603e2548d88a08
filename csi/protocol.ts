// The part of the CSI specification this driver serves, declared by the project from the spec (v1.13.0, the
// version csi-test v5.6.0 pins): each message's fields with the spec's names and numbers, and the RPCs of the
// Identity, Controller and Node services (docs/adr/0047-the-csi-driver-one-writer-per-volume.md). One
// declaration gives both the wire format (through @grpc/proto-loader's protobufjs JSON form) and the TypeScript
// types of every message, so the two cannot drift apart. An RPC left out is answered UNIMPLEMENTED by grpc-js.
// The spec's oneofs are declared as their plain fields (the same bytes on the wire); its field options
// (csi_secret, alpha) change nothing on the wire and are left out.
import type { ServiceDefinition } from "@grpc/grpc-js";
import { fromJSON, type Options } from "@grpc/proto-loader";

/** The spec's protobuf package. */
export const CSI_PACKAGE = "csi.v1";

/** A field: its type (a scalar, "map" for map<string, string>, or a message or enum below), its number. */
type Field = readonly [type: string, id: number] | readonly [type: string, id: number, rule: "repeated"];

const ENUMS = {
  "PluginCapability.Service.Type": {
    UNKNOWN: 0,
    CONTROLLER_SERVICE: 1,
    VOLUME_ACCESSIBILITY_CONSTRAINTS: 2,
    GROUP_CONTROLLER_SERVICE: 3,
    SNAPSHOT_METADATA_SERVICE: 4,
    SNAPSHOT_ACCESSIBILITY_CONSTRAINTS: 5,
  },
  "PluginCapability.VolumeExpansion.Type": { UNKNOWN: 0, ONLINE: 1, OFFLINE: 2 },
  "VolumeCapability.AccessMode.Mode": {
    UNKNOWN: 0,
    SINGLE_NODE_WRITER: 1,
    SINGLE_NODE_READER_ONLY: 2,
    MULTI_NODE_READER_ONLY: 3,
    MULTI_NODE_SINGLE_WRITER: 4,
    MULTI_NODE_MULTI_WRITER: 5,
    SINGLE_NODE_SINGLE_WRITER: 6,
    SINGLE_NODE_MULTI_WRITER: 7,
  },
  "ControllerServiceCapability.RPC.Type": {
    UNKNOWN: 0,
    CREATE_DELETE_VOLUME: 1,
    PUBLISH_UNPUBLISH_VOLUME: 2,
    LIST_VOLUMES: 3,
    GET_CAPACITY: 4,
    CREATE_DELETE_SNAPSHOT: 5,
    LIST_SNAPSHOTS: 6,
    CLONE_VOLUME: 7,
    PUBLISH_READONLY: 8,
    EXPAND_VOLUME: 9,
    LIST_VOLUMES_PUBLISHED_NODES: 10,
    GET_VOLUME: 12,
    SINGLE_NODE_MULTI_WRITER: 13,
    MODIFY_VOLUME: 14,
    GET_SNAPSHOT: 15,
    GET_VOLUME_HEALTH: 16,
    LIST_VOLUME_HEALTH: 17,
  },
  "NodeServiceCapability.RPC.Type": {
    UNKNOWN: 0,
    STAGE_UNSTAGE_VOLUME: 1,
    GET_VOLUME_STATS: 2,
    EXPAND_VOLUME: 3,
    VOLUME_CONDITION: 4,
    SINGLE_NODE_MULTI_WRITER: 5,
    VOLUME_MOUNT_GROUP: 6,
    GET_VOLUME_HEALTH: 7,
    GET_STORAGE_HEALTH: 8,
  },
  "VolumeUsage.Unit": { UNKNOWN: 0, BYTES: 1, INODES: 2 },
} as const;

const MESSAGES = {
  // google/protobuf/wrappers.proto, which the spec imports.
  "google.protobuf.BoolValue": { value: ["bool", 1] },
  "google.protobuf.Int64Value": { value: ["int64", 1] },
  // google/protobuf/timestamp.proto: a snapshot's creation time.
  "google.protobuf.Timestamp": { seconds: ["int64", 1], nanos: ["int32", 2] },

  // Identity.
  GetPluginInfoRequest: {},
  GetPluginInfoResponse: { name: ["string", 1], vendor_version: ["string", 2], manifest: ["map", 3] },
  GetPluginCapabilitiesRequest: {},
  GetPluginCapabilitiesResponse: { capabilities: ["PluginCapability", 1, "repeated"] },
  PluginCapability: {
    service: ["PluginCapability.Service", 1],
    volume_expansion: ["PluginCapability.VolumeExpansion", 2],
  },
  "PluginCapability.Service": { type: ["PluginCapability.Service.Type", 1] },
  "PluginCapability.VolumeExpansion": { type: ["PluginCapability.VolumeExpansion.Type", 1] },
  ProbeRequest: {},
  ProbeResponse: { ready: ["google.protobuf.BoolValue", 1] },

  // What volumes are made of.
  CapacityRange: { required_bytes: ["int64", 1], limit_bytes: ["int64", 2] },
  VolumeCapability: {
    block: ["VolumeCapability.BlockVolume", 1],
    mount: ["VolumeCapability.MountVolume", 2],
    access_mode: ["VolumeCapability.AccessMode", 3],
  },
  "VolumeCapability.BlockVolume": {},
  "VolumeCapability.MountVolume": {
    fs_type: ["string", 1],
    mount_flags: ["string", 2, "repeated"],
    volume_mount_group: ["string", 3],
  },
  "VolumeCapability.AccessMode": { mode: ["VolumeCapability.AccessMode.Mode", 1] },
  VolumeContentSource: {
    snapshot: ["VolumeContentSource.SnapshotSource", 1],
    volume: ["VolumeContentSource.VolumeSource", 2],
  },
  "VolumeContentSource.SnapshotSource": { snapshot_id: ["string", 1] },
  "VolumeContentSource.VolumeSource": { volume_id: ["string", 1] },
  Topology: { segments: ["map", 1] },
  TopologyRequirement: { requisite: ["Topology", 1, "repeated"], preferred: ["Topology", 2, "repeated"] },
  Volume: {
    capacity_bytes: ["int64", 1],
    volume_id: ["string", 2],
    volume_context: ["map", 3],
    content_source: ["VolumeContentSource", 4],
    accessible_topology: ["Topology", 5, "repeated"],
  },

  // Controller.
  CreateVolumeRequest: {
    name: ["string", 1],
    capacity_range: ["CapacityRange", 2],
    volume_capabilities: ["VolumeCapability", 3, "repeated"],
    parameters: ["map", 4],
    secrets: ["map", 5],
    volume_content_source: ["VolumeContentSource", 6],
    accessibility_requirements: ["TopologyRequirement", 7],
    mutable_parameters: ["map", 8],
  },
  CreateVolumeResponse: { volume: ["Volume", 1] },
  DeleteVolumeRequest: { volume_id: ["string", 1], secrets: ["map", 2] },
  DeleteVolumeResponse: {},
  ControllerPublishVolumeRequest: {
    volume_id: ["string", 1],
    node_id: ["string", 2],
    volume_capability: ["VolumeCapability", 3],
    readonly: ["bool", 4],
    secrets: ["map", 5],
    volume_context: ["map", 6],
  },
  ControllerPublishVolumeResponse: { publish_context: ["map", 1] },
  ControllerUnpublishVolumeRequest: { volume_id: ["string", 1], node_id: ["string", 2], secrets: ["map", 3] },
  ControllerUnpublishVolumeResponse: {},
  ValidateVolumeCapabilitiesRequest: {
    volume_id: ["string", 1],
    volume_context: ["map", 2],
    volume_capabilities: ["VolumeCapability", 3, "repeated"],
    parameters: ["map", 4],
    secrets: ["map", 5],
    mutable_parameters: ["map", 6],
  },
  ValidateVolumeCapabilitiesResponse: {
    confirmed: ["ValidateVolumeCapabilitiesResponse.Confirmed", 1],
    message: ["string", 2],
  },
  "ValidateVolumeCapabilitiesResponse.Confirmed": {
    volume_context: ["map", 1],
    volume_capabilities: ["VolumeCapability", 2, "repeated"],
    parameters: ["map", 3],
    mutable_parameters: ["map", 4],
  },
  GetCapacityRequest: {
    volume_capabilities: ["VolumeCapability", 1, "repeated"],
    parameters: ["map", 2],
    accessible_topology: ["Topology", 3],
  },
  GetCapacityResponse: {
    available_capacity: ["int64", 1],
    maximum_volume_size: ["google.protobuf.Int64Value", 2],
    minimum_volume_size: ["google.protobuf.Int64Value", 3],
  },
  ControllerGetCapabilitiesRequest: {},
  ControllerGetCapabilitiesResponse: { capabilities: ["ControllerServiceCapability", 1, "repeated"] },
  ControllerServiceCapability: { rpc: ["ControllerServiceCapability.RPC", 1] },
  "ControllerServiceCapability.RPC": { type: ["ControllerServiceCapability.RPC.Type", 1] },
  ControllerExpandVolumeRequest: {
    volume_id: ["string", 1],
    capacity_range: ["CapacityRange", 2],
    secrets: ["map", 3],
    volume_capability: ["VolumeCapability", 4],
  },
  ControllerExpandVolumeResponse: { capacity_bytes: ["int64", 1], node_expansion_required: ["bool", 2] },
  CreateSnapshotRequest: {
    source_volume_id: ["string", 1],
    name: ["string", 2],
    secrets: ["map", 3],
    parameters: ["map", 4],
    accessibility_requirements: ["TopologyRequirement", 5],
  },
  CreateSnapshotResponse: { snapshot: ["Snapshot", 1] },
  Snapshot: {
    size_bytes: ["int64", 1],
    snapshot_id: ["string", 2],
    source_volume_id: ["string", 3],
    creation_time: ["google.protobuf.Timestamp", 4],
    ready_to_use: ["bool", 5],
    group_snapshot_id: ["string", 6],
    accessible_topology: ["Topology", 7, "repeated"],
  },
  DeleteSnapshotRequest: { snapshot_id: ["string", 1], secrets: ["map", 2] },
  DeleteSnapshotResponse: {},
  ListSnapshotsRequest: {
    max_entries: ["int32", 1],
    starting_token: ["string", 2],
    source_volume_id: ["string", 3],
    snapshot_id: ["string", 4],
    secrets: ["map", 5],
  },
  ListSnapshotsResponse: {
    entries: ["ListSnapshotsResponse.Entry", 1, "repeated"],
    next_token: ["string", 2],
  },
  "ListSnapshotsResponse.Entry": { snapshot: ["Snapshot", 1] },

  // Node.
  NodeStageVolumeRequest: {
    volume_id: ["string", 1],
    publish_context: ["map", 2],
    staging_target_path: ["string", 3],
    volume_capability: ["VolumeCapability", 4],
    secrets: ["map", 5],
    volume_context: ["map", 6],
  },
  NodeStageVolumeResponse: {},
  NodeUnstageVolumeRequest: { volume_id: ["string", 1], staging_target_path: ["string", 2] },
  NodeUnstageVolumeResponse: {},
  NodePublishVolumeRequest: {
    volume_id: ["string", 1],
    publish_context: ["map", 2],
    staging_target_path: ["string", 3],
    target_path: ["string", 4],
    volume_capability: ["VolumeCapability", 5],
    readonly: ["bool", 6],
    secrets: ["map", 7],
    volume_context: ["map", 8],
  },
  NodePublishVolumeResponse: {},
  NodeUnpublishVolumeRequest: { volume_id: ["string", 1], target_path: ["string", 2] },
  NodeUnpublishVolumeResponse: {},
  NodeGetVolumeStatsRequest: {
    volume_id: ["string", 1],
    volume_path: ["string", 2],
    staging_target_path: ["string", 3],
  },
  NodeGetVolumeStatsResponse: {
    usage: ["VolumeUsage", 1, "repeated"],
    volume_condition: ["VolumeCondition", 2],
  },
  VolumeCondition: { abnormal: ["bool", 1], message: ["string", 2] },
  VolumeUsage: {
    available: ["int64", 1],
    total: ["int64", 2],
    used: ["int64", 3],
    unit: ["VolumeUsage.Unit", 4],
  },
  NodeExpandVolumeRequest: {
    volume_id: ["string", 1],
    volume_path: ["string", 2],
    capacity_range: ["CapacityRange", 3],
    staging_target_path: ["string", 4],
    volume_capability: ["VolumeCapability", 5],
    secrets: ["map", 6],
  },
  NodeExpandVolumeResponse: { capacity_bytes: ["int64", 1] },
  NodeGetCapabilitiesRequest: {},
  NodeGetCapabilitiesResponse: { capabilities: ["NodeServiceCapability", 1, "repeated"] },
  NodeServiceCapability: { rpc: ["NodeServiceCapability.RPC", 1] },
  "NodeServiceCapability.RPC": { type: ["NodeServiceCapability.RPC.Type", 1] },
  NodeGetInfoRequest: {},
  NodeGetInfoResponse: {
    node_id: ["string", 1],
    max_volumes_per_node: ["int64", 2],
    accessible_topology: ["Topology", 3],
  },
} as const satisfies Record<string, Record<string, Field>>;

/** Each RPC: [request message, response message]. */
const SERVICES = {
  Identity: {
    GetPluginInfo: ["GetPluginInfoRequest", "GetPluginInfoResponse"],
    GetPluginCapabilities: ["GetPluginCapabilitiesRequest", "GetPluginCapabilitiesResponse"],
    Probe: ["ProbeRequest", "ProbeResponse"],
  },
  Controller: {
    CreateVolume: ["CreateVolumeRequest", "CreateVolumeResponse"],
    DeleteVolume: ["DeleteVolumeRequest", "DeleteVolumeResponse"],
    ControllerPublishVolume: ["ControllerPublishVolumeRequest", "ControllerPublishVolumeResponse"],
    ControllerUnpublishVolume: ["ControllerUnpublishVolumeRequest", "ControllerUnpublishVolumeResponse"],
    ValidateVolumeCapabilities: ["ValidateVolumeCapabilitiesRequest", "ValidateVolumeCapabilitiesResponse"],
    GetCapacity: ["GetCapacityRequest", "GetCapacityResponse"],
    ControllerGetCapabilities: ["ControllerGetCapabilitiesRequest", "ControllerGetCapabilitiesResponse"],
    ControllerExpandVolume: ["ControllerExpandVolumeRequest", "ControllerExpandVolumeResponse"],
    CreateSnapshot: ["CreateSnapshotRequest", "CreateSnapshotResponse"],
    DeleteSnapshot: ["DeleteSnapshotRequest", "DeleteSnapshotResponse"],
    ListSnapshots: ["ListSnapshotsRequest", "ListSnapshotsResponse"],
  },
  Node: {
    NodeStageVolume: ["NodeStageVolumeRequest", "NodeStageVolumeResponse"],
    NodeUnstageVolume: ["NodeUnstageVolumeRequest", "NodeUnstageVolumeResponse"],
    NodePublishVolume: ["NodePublishVolumeRequest", "NodePublishVolumeResponse"],
    NodeUnpublishVolume: ["NodeUnpublishVolumeRequest", "NodeUnpublishVolumeResponse"],
    NodeGetVolumeStats: ["NodeGetVolumeStatsRequest", "NodeGetVolumeStatsResponse"],
    NodeExpandVolume: ["NodeExpandVolumeRequest", "NodeExpandVolumeResponse"],
    NodeGetCapabilities: ["NodeGetCapabilitiesRequest", "NodeGetCapabilitiesResponse"],
    NodeGetInfo: ["NodeGetInfoRequest", "NodeGetInfoResponse"],
  },
} as const satisfies Record<string, Record<string, readonly [keyof typeof MESSAGES, keyof typeof MESSAGES]>>;

type Messages = typeof MESSAGES;
type Enums = typeof ENUMS;
export type MessageName = keyof Messages;
export type EnumName = keyof Enums;
interface Scalars {
  string: string;
  bool: boolean;
  /** As a number (proto-loader's `longs: Number`): sizes up to 8 PiB are exact. */
  int64: number;
  int32: number;
  map: Record<string, string>;
}
type Value<T> = T extends keyof Scalars
  ? Scalars[T]
  : T extends EnumName
    ? keyof Enums[T]
    : T extends MessageName
      ? Message<T>
      : never;
type FieldValue<F> = F extends readonly [infer T, number, "repeated"]
  ? Value<T>[]
  : F extends readonly [infer T, number]
    ? T extends MessageName
      ? Value<T> | null
      : Value<T>
    : never;

/**
 * A message as the server sees it: every field optional. A decoded request has every scalar (its zero value
 * when unset), every list and map, and `null` for a message field that is not set.
 */
export type Message<N extends MessageName> = { [K in keyof Messages[N]]?: FieldValue<Messages[N][K]> };

export type Services = typeof SERVICES;
export type ServiceName = keyof Services;
export type MethodName<S extends ServiceName> = keyof Services[S] & string;
export type RequestOf<S extends ServiceName, M extends MethodName<S>> = Services[S][M] extends readonly [
  infer R extends MessageName,
  MessageName,
]
  ? Message<R>
  : never;
export type ResponseOf<S extends ServiceName, M extends MethodName<S>> = Services[S][M] extends readonly [
  MessageName,
  infer R extends MessageName,
]
  ? Message<R>
  : never;
export type EnumValue<E extends EnumName> = keyof Enums[E];

export type AccessMode = EnumValue<"VolumeCapability.AccessMode.Mode">;
export type VolumeCapability = Message<"VolumeCapability">;
export type CapacityRange = Message<"CapacityRange">;
export type Snapshot = Message<"Snapshot">;

interface ProtobufNamespace {
  nested?: Record<string, ProtobufNamespace>;
  fields?: Record<string, { type: string; id: number; rule?: string; keyType?: string }>;
  values?: Record<string, number>;
  methods?: Record<string, { requestType: string; responseType: string }>;
}

/** Where a dotted name ("csi.v1.VolumeCapability.AccessMode") lives in the protobufjs tree. */
function node(root: ProtobufNamespace, path: readonly string[]): ProtobufNamespace {
  let at = root;
  for (const part of path) {
    at.nested ??= {};
    at = at.nested[part] ??= {};
  }
  return at;
}

/** An absolute protobufjs name for a declared message or enum, so no lookup depends on scope. */
function qualified(name: string): string {
  return name.startsWith("google.") ? `.${name}` : `.${CSI_PACKAGE}.${name}`;
}

function packagePath(name: string): string[] {
  return (name.startsWith("google.") ? name : `${CSI_PACKAGE}.${name}`).split(".");
}

/** The declaration in protobufjs' JSON form (what `protoc` would make of a .proto file holding it). */
export function protobufJson(): ProtobufNamespace {
  const root: ProtobufNamespace = {};
  for (const [name, values] of Object.entries(ENUMS)) node(root, packagePath(name)).values = { ...values };
  for (const [name, fields] of Object.entries(MESSAGES)) {
    const message = node(root, packagePath(name));
    message.fields = {};
    for (const [field, [type, id, rule]] of Object.entries(fields as Record<string, Field>)) {
      message.fields[field] =
        type === "map"
          ? { keyType: "string", type: "string", id }
          : {
              type: type in ENUMS || type in MESSAGES ? qualified(type) : type,
              id,
              ...(rule ? { rule } : {}),
            };
    }
  }
  for (const [service, methods] of Object.entries(SERVICES)) {
    node(root, packagePath(service)).methods = Object.fromEntries(
      Object.entries(methods as Record<string, readonly [string, string]>).map(
        ([method, [request, response]]) => [
          method,
          { requestType: qualified(request), responseType: qualified(response) },
        ],
      ),
    );
  }
  return root;
}

/**
 * How messages become JavaScript objects: the spec's snake_case names, int64 as numbers, enums by name, every
 * field present on a decoded request (zero values, empty lists and maps, null messages).
 */
export const DECODING: Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  arrays: true,
  objects: true,
};

let definitions: ReturnType<typeof fromJSON> | undefined;

/** A service's definition for grpc-js' Server.addService and makeClientConstructor. */
export function serviceDefinition(service: ServiceName): ServiceDefinition {
  definitions ??= fromJSON(protobufJson(), DECODING);
  return definitions[`${CSI_PACKAGE}.${service}`] as ServiceDefinition;
}

/** The RPCs declared for a service (what the server registers; anything else is UNIMPLEMENTED). */
export function methodNames<S extends ServiceName>(service: S): MethodName<S>[] {
  return Object.keys(SERVICES[service]) as MethodName<S>[];
}
