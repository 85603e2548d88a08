// POST /hooks/cspc-customize: the related objects cspc-sync needs. Metacontroller caches this answer per CSPC
// generation, so it depends on the CSPC's namespace, name and spec only. The CSPC's CStorVolumeReplicas say
// which pools hold volumes (lib/rules/held-volumes.ts); with the CStorVolumes' consistency factors they say
// which pool's pod may restart (lib/cspc/rollout.ts). Nodes are asked for by each pool's nodeSelector, so a
// sync's request grows with the CSPC, not with the cluster; a pool without one (a device set placed by its
// PVs) needs every node. A selector whose key is mistyped then finds no node at all, so the CSPC's status
// cannot suggest the key meant (the admission webhook, which lists every node, still does at apply time).
// PersistentVolumes cannot be named here (a device set's PVCs bind after this answer is cached), so a CSPC
// with device sets asks for all of them, and one without asks for none.
import { canonicalJson } from "../../lib/canonical.js";
import { API_VERSION, KIND, LABEL } from "../../api/constants.js";
import type { CustomizeResponse, RelatedResourceRule } from "../../api/types.js";
import { isRecord, parseCustomizeRequest } from "../../lib/request.js";

export function handleCspcCustomize(body: unknown): CustomizeResponse {
  const { parent } = parseCustomizeRequest(body, KIND.cspc);
  const namespace = parent.metadata.namespace ?? "default";
  const pools = poolsOf((parent as { spec?: unknown }).spec);
  return {
    relatedResources: [
      { apiVersion: API_VERSION, resource: "blockdevices", namespace, labelSelector: {} },
      { apiVersion: API_VERSION, resource: "blockdeviceclaims", namespace, labelSelector: {} },
      ...nodeRules(pools),
      // Pools on device sets: where their PVCs are bound, and the Namespace that keeps retained PVCs (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md).
      ...(pools.some(hasDeviceSets)
        ? [{ apiVersion: "v1", resource: "persistentvolumes", labelSelector: {} }]
        : []),
      { apiVersion: "v1", resource: "namespaces", names: [namespace] },
      {
        apiVersion: API_VERSION,
        resource: "cstorvolumereplicas",
        namespace,
        labelSelector: { matchLabels: { [LABEL.cspc]: parent.metadata.name ?? "" } },
      },
      {
        apiVersion: API_VERSION,
        resource: "cstorvolumes",
        namespace,
        labelSelector: { matchLabels: { [LABEL.cspc]: parent.metadata.name ?? "" } },
      },
    ],
  };
}

type Pool = Record<string, unknown>;

/** The pools as stored, read tolerantly: anything unexpected asks for more, never for less. */
function poolsOf(spec: unknown): (Pool | undefined)[] {
  const pools = isRecord(spec) ? spec.pools : undefined;
  if (!Array.isArray(pools)) return [undefined];
  return pools.map((pool) => (isRecord(pool) ? pool : undefined));
}

/** One rule per distinct nodeSelector; every node when a pool has none (or one that is not a string map). */
function nodeRules(pools: readonly (Pool | undefined)[]): RelatedResourceRule[] {
  const selectors = pools.map((pool) => stringMap(pool?.nodeSelector));
  if (selectors.some((s) => s === undefined || Object.keys(s).length === 0))
    return [{ apiVersion: "v1", resource: "nodes", labelSelector: {} }];
  const distinct = new Map(selectors.map((s) => [canonicalJson(s), s!]));
  return [...distinct.keys()].sort().map((key) => ({
    apiVersion: "v1",
    resource: "nodes",
    labelSelector: { matchLabels: distinct.get(key)! },
  }));
}

function hasDeviceSets(pool: Pool | undefined): boolean {
  return pool === undefined || (Array.isArray(pool.deviceSets) && pool.deviceSets.length > 0);
}

function stringMap(value: unknown): Record<string, string> | undefined {
  if (!isRecord(value)) return undefined;
  return Object.values(value).every((v) => typeof v === "string")
    ? (value as Record<string, string>)
    : undefined;
}
