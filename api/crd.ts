// CustomResourceDefinitions, generated from the schemas in api/schema.ts (the one definition of the API).
// `npm run generate` writes them to metacontroller/crds/; a test fails when the committed files are stale.
import type { TSchema } from "@sinclair/typebox";
import { GROUP, KIND, LIMITS, VERSION } from "./constants.js";
import {
  BlockDeviceClaimSpecSchema,
  BlockDeviceClaimStatusSchema,
  BlockDeviceSpecSchema,
  BlockDeviceStatusSchema,
  CSPCSpecSchema,
  CSPCStatusSchema,
  CSPISpecSchema,
  CSPIStatusSchema,
} from "./schema.js";
import {
  CVCSpecSchema,
  CVCStatusSchema,
  CVRSpecSchema,
  CVRStatusSchema,
  CVSnapSpecSchema,
  CVSnapStatusSchema,
  CVSpecSchema,
  CVStatusSchema,
} from "./volume-schema.js";

type OpenApi = Record<string, unknown>;

/**
 * Turns a TypeBox schema into a structural OpenAPI v3 schema: closed objects become open (the API server
 * prunes unknown fields; structural schemas forbid additionalProperties: false), records become
 * additionalProperties maps, literal unions become enums.
 */
export function toStructural(schema: TSchema | OpenApi): OpenApi {
  const s = schema as OpenApi;
  const out: OpenApi = {};
  const anyOf = s.anyOf as OpenApi[] | undefined;
  if (anyOf && anyOf.every((a) => "const" in a)) {
    out.type = typeof anyOf[0].const === "number" ? "integer" : "string";
    out.enum = anyOf.map((a) => a.const);
    if (s.description) out.description = s.description;
    return out;
  }
  if ("const" in s) {
    out.type = typeof s.const === "number" ? "integer" : "string";
    out.enum = [s.const];
    return out;
  }
  for (const [key, value] of Object.entries(s)) {
    switch (key) {
      case "properties":
        out.properties = Object.fromEntries(
          Object.entries(value as Record<string, OpenApi>).map(([k, v]) => [k, toStructural(v)]),
        );
        break;
      case "patternProperties":
        out.additionalProperties = toStructural(Object.values(value as Record<string, OpenApi>)[0]);
        break;
      case "items":
        out.items = toStructural(value as OpenApi);
        break;
      case "anyOf":
        out.anyOf = (value as OpenApi[]).map((v) => toStructural(v));
        break;
      case "additionalProperties":
        if (typeof value === "object") out.additionalProperties = toStructural(value as OpenApi);
        break;
      case "$id":
        break;
      default:
        out[key] = value;
    }
  }
  if (
    Object.keys(out).length === 0 ||
    (out.type === undefined && !out.anyOf && !out["x-kubernetes-int-or-string"])
  ) {
    return { ...out, "x-kubernetes-preserve-unknown-fields": true };
  }
  return out;
}

interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "date" | "boolean";
  jsonPath: string;
  priority?: number;
  description?: string;
}

interface CrdInput {
  kind: string;
  plural: string;
  shortNames: string[];
  spec: TSchema;
  status: TSchema;
  statusSubresource: boolean;
  columns: PrinterColumn[];
  rootValidations?: { rule: string; message: string }[];
}

const age: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };

function crd(input: CrdInput): OpenApi {
  const root: OpenApi = {
    type: "object",
    required: ["spec"],
    properties: {
      apiVersion: { type: "string" },
      kind: { type: "string" },
      metadata: { type: "object" },
      spec: toStructural(input.spec),
      status: toStructural(input.status),
    },
  };
  if (input.rootValidations) root["x-kubernetes-validations"] = input.rootValidations;
  const version: OpenApi = {
    name: VERSION,
    served: true,
    storage: true,
    schema: { openAPIV3Schema: root },
    additionalPrinterColumns: input.columns,
  };
  if (input.statusSubresource) version.subresources = { status: {} };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${input.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: {
        kind: input.kind,
        listKind: `${input.kind}List`,
        plural: input.plural,
        singular: input.kind.toLowerCase(),
        shortNames: input.shortNames,
      },
      scope: "Namespaced",
      versions: [version],
    },
  };
}

export function cspcCrd(): OpenApi {
  return crd({
    kind: KIND.cspc,
    plural: "cstorpoolclusters",
    shortNames: ["cspc"],
    spec: CSPCSpecSchema,
    status: CSPCStatusSchema,
    statusSubresource: true,
    columns: [
      { name: "HealthyInstances", type: "integer", jsonPath: ".status.healthyInstances" },
      { name: "ProvisionedInstances", type: "integer", jsonPath: ".status.provisionedInstances" },
      { name: "DesiredInstances", type: "integer", jsonPath: ".status.desiredInstances" },
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      age,
    ],
    rootValidations: [
      {
        rule: `size(self.metadata.name) <= ${LIMITS.cspcNameLength}`,
        message: `a CStorPoolCluster name can be at most ${LIMITS.cspcNameLength} characters: its pools are named <cspc>-<hash> and used as label values`,
      },
    ],
  });
}

export function cspiCrd(): OpenApi {
  return crd({
    kind: KIND.cspi,
    plural: "cstorpoolinstances",
    shortNames: ["cspi"],
    spec: CSPISpecSchema,
    status: CSPIStatusSchema,
    statusSubresource: true,
    columns: [
      { name: "HostName", type: "string", jsonPath: ".spec.hostName" },
      { name: "Allocated", type: "string", jsonPath: ".status.capacity.used" },
      { name: "Free", type: "string", jsonPath: ".status.capacity.free" },
      { name: "Capacity", type: "string", jsonPath: ".status.capacity.total" },
      { name: "HealthyReplicas", type: "integer", jsonPath: ".status.healthyReplicas" },
      { name: "ProvisionedReplicas", type: "integer", jsonPath: ".status.provisionedReplicas" },
      { name: "Status", type: "string", jsonPath: ".status.phase" },
      age,
      { name: "ReadOnly", type: "boolean", jsonPath: ".status.readOnly", priority: 1 },
      { name: "Type", type: "string", jsonPath: ".spec.raidGroups[0].type", priority: 1 },
    ],
  });
}

/** NDM's BlockDevice, for clusters and tests without NDM. Only the fields we read are described. */
export function blockDeviceCrd(): OpenApi {
  return crd({
    kind: KIND.blockDevice,
    plural: "blockdevices",
    shortNames: ["bd"],
    spec: BlockDeviceSpecSchema,
    status: BlockDeviceStatusSchema,
    statusSubresource: false,
    columns: [
      { name: "NodeName", type: "string", jsonPath: ".spec.nodeAttributes.nodeName" },
      { name: "Size", type: "string", jsonPath: ".spec.capacity.storage" },
      { name: "ClaimState", type: "string", jsonPath: ".status.claimState" },
      { name: "Status", type: "string", jsonPath: ".status.state" },
      age,
    ],
  });
}

export function blockDeviceClaimCrd(): OpenApi {
  return crd({
    kind: KIND.blockDeviceClaim,
    plural: "blockdeviceclaims",
    shortNames: ["bdc"],
    spec: BlockDeviceClaimSpecSchema,
    status: BlockDeviceClaimStatusSchema,
    statusSubresource: false,
    columns: [
      { name: "BlockDeviceName", type: "string", jsonPath: ".spec.blockDeviceName" },
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      age,
    ],
  });
}

export function cvcCrd(): OpenApi {
  return crd({
    kind: KIND.cvc,
    plural: "cstorvolumeconfigs",
    shortNames: ["cvc"],
    spec: CVCSpecSchema,
    status: CVCStatusSchema,
    statusSubresource: true,
    columns: [
      { name: "Capacity", type: "string", jsonPath: ".spec.capacity" },
      { name: "PoolCluster", type: "string", jsonPath: ".spec.cstorPoolCluster" },
      { name: "Replicas", type: "integer", jsonPath: ".spec.replicaCount" },
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      age,
      { name: "Reason", type: "string", jsonPath: ".status.reason", priority: 1 },
    ],
    rootValidations: [
      {
        rule: "size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
        message:
          "a CStorVolumeConfig name must be a DNS label (at most 63 lowercase letters, digits and '-', starting with a letter): it names the volume's Service and is a label value on its replicas",
      },
    ],
  });
}

export function cvCrd(): OpenApi {
  return crd({
    kind: KIND.cv,
    plural: "cstorvolumes",
    shortNames: ["cv"],
    spec: CVSpecSchema,
    status: CVStatusSchema,
    statusSubresource: true,
    columns: [
      { name: "Capacity", type: "string", jsonPath: ".spec.capacity" },
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      {
        name: "RF",
        type: "integer",
        jsonPath: ".spec.replicationFactor",
        description: "Replicas of the volume.",
      },
      {
        name: "CF",
        type: "integer",
        jsonPath: ".spec.consistencyFactor",
        description: "Replicas a write needs.",
      },
      { name: "Healthy", type: "integer", jsonPath: ".status.healthyReplicas" },
      age,
      { name: "TargetPortal", type: "string", jsonPath: ".spec.targetPortal", priority: 1 },
    ],
  });
}

export function cvrCrd(): OpenApi {
  return crd({
    kind: KIND.cvr,
    plural: "cstorvolumereplicas",
    shortNames: ["cvr"],
    spec: CVRSpecSchema,
    status: CVRStatusSchema,
    statusSubresource: true,
    columns: [
      { name: "Pool", type: "string", jsonPath: ".metadata.labels.cstorpoolinstance\\.openebs\\.io/name" },
      {
        name: "Node",
        type: "string",
        jsonPath: ".metadata.annotations.cstorpoolinstance\\.openebs\\.io/hostname",
      },
      { name: "Allocated", type: "string", jsonPath: ".status.capacity.total" },
      { name: "Used", type: "string", jsonPath: ".status.capacity.used" },
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      age,
      { name: "Reason", type: "string", jsonPath: ".status.reason", priority: 1 },
    ],
  });
}

export function cvsnapCrd(): OpenApi {
  return crd({
    kind: KIND.cvsnap,
    plural: "cstorvolumesnapshots",
    shortNames: ["cvsnap"],
    spec: CVSnapSpecSchema,
    status: CVSnapStatusSchema,
    statusSubresource: true,
    columns: [
      { name: "Volume", type: "string", jsonPath: ".spec.volume" },
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      { name: "RestoreSize", type: "string", jsonPath: ".status.restoreSize" },
      { name: "Taken", type: "date", jsonPath: ".status.creationTime" },
      age,
      { name: "Reason", type: "string", jsonPath: ".status.reason", priority: 1 },
    ],
  });
}

/** File name under metacontroller/crds → CRD. */
export function allCrds(): Record<string, OpenApi> {
  return {
    "cstorpoolclusters.yaml": cspcCrd(),
    "cstorpoolinstances.yaml": cspiCrd(),
    "cstorvolumeconfigs.yaml": cvcCrd(),
    "cstorvolumes.yaml": cvCrd(),
    "cstorvolumereplicas.yaml": cvrCrd(),
    "cstorvolumesnapshots.yaml": cvsnapCrd(),
    "ndm/blockdevices.yaml": blockDeviceCrd(),
    "ndm/blockdeviceclaims.yaml": blockDeviceClaimCrd(),
  };
}
