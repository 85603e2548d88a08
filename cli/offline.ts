// The cluster as validate and render see it offline: the objects in the files, and for what the files do not
// hold the same stand-ins in both commands, each named in a note, so that the two give the same verdict on
// the same input. A CSPC without a namespace is taken to be in the install's namespace, where NDM keeps the
// BlockDevices, unless -n says otherwise.
import { KIND, LABEL, TYPE_KEY } from "../api/constants.js";
import type { CSPC, CSPI, CVR, KubeObject, PoolSpec } from "../api/types.js";
import { inventoryOf } from "../lib/admission/judge.js";
import type { ClusterFacts } from "../lib/admission/lookup.js";
import { buildCspiSpec, devicesOf } from "../lib/cspc/build.js";
import { cspiName } from "../lib/names.js";
import { isReadableAs, readProblem } from "../lib/request.js";
import { isBlockPool } from "../lib/rules/device-sets.js";
import { resolveNode } from "../lib/rules/placement.js";
import { InputError, UsageError, type CommonOptions } from "./args.js";
import { readAll, type CliIO } from "./input.js";

/** Where the install puts the hooks and the node daemon, and where NDM keeps BlockDevices. */
export const INSTALL_NAMESPACE = "openebs";

/** The objects of --block-devices and --nodes, read once for every CSPC. */
export interface ClusterFiles {
  /** From --block-devices: BlockDevices, BlockDeviceClaims, CStorPoolInstances; undefined without the flag. */
  cluster?: KubeObject[];
  /** The CStorPoolInstances and CStorVolumeReplicas of --block-devices, each checked as the hooks read one. */
  cspis?: CSPI[];
  replicas?: CVR[];
  nodes?: KubeObject[];
}

export function readClusterFiles(io: CliIO, options: CommonOptions): ClusterFiles {
  const cluster = options.blockDevices ? readAll(io, [options.blockDevices]) : undefined;
  return {
    ...(cluster
      ? {
          cluster,
          cspis: ofKind(cluster, KIND.cspi).map((o) => readable(o, TYPE_KEY.cspi)),
          replicas: ofKind(cluster, KIND.cvr).map((o) => readable(o, TYPE_KEY.cvr)),
        }
      : {}),
    ...(options.nodes ? { nodes: readAll(io, [options.nodes]).filter((o) => o.kind === KIND.node) } : {}),
  };
}

/**
 * The CSPC with the namespace it would get: its own, else -n, else the install's (said in a note). -n and a
 * different metadata.namespace is a usage error, as in kubectl.
 */
function withNamespace(object: KubeObject, flag: string | undefined, notes: string[]): KubeObject {
  const own = object.metadata?.namespace;
  const name = object.metadata?.name ?? "";
  if (own && flag && own !== flag) {
    throw new UsageError(
      `${object.kind} ${name} has metadata.namespace ${own}, not ${flag} (-n): drop -n, or use -n ${own}`,
    );
  }
  if (own) return object;
  if (!flag) {
    notes.push(
      `${object.kind} ${name} has no metadata.namespace: assumed ${INSTALL_NAMESPACE}, the install's namespace, where NDM keeps BlockDevices (-n <namespace> to choose)`,
    );
  }
  return { ...object, metadata: { ...object.metadata, namespace: flag ?? INSTALL_NAMESPACE } };
}

/** Each object in the namespace it would get, with the notes that say what was assumed for it. */
export function placed(
  objects: readonly KubeObject[],
  flag: string | undefined,
): { object: KubeObject; notes: string[] }[] {
  return objects.map((o) => {
    const notes: string[] = [];
    return { object: withNamespace(o, flag, notes), notes };
  });
}

const ofKind = (objects: readonly KubeObject[], kind: string) => objects.filter((o) => o.kind === kind);

/**
 * The facts the webhook would look up and cspc-sync would observe, for one CSPC (with its namespace) and,
 * for a change, its stored version: from the files, else assumed, each assumption added to notes.
 */
export function offlineFacts(
  proposed: CSPC,
  stored: CSPC | null,
  files: ClusterFiles,
  notes: string[],
): ClusterFacts {
  const namespace = proposed.metadata.namespace!;
  const subject = `${KIND.cspc} ${namespace}/${proposed.metadata.name ?? ""}`;
  if (namespace !== INSTALL_NAMESPACE) {
    notes.push(
      `${subject} is in namespace ${namespace}, but the install runs the node daemon and NDM keeps BlockDevices in ${INSTALL_NAMESPACE}: ` +
        `its devices are looked up in ${namespace} only, so create it in ${INSTALL_NAMESPACE} (unless you installed elsewhere)`,
    );
  }
  const poolsOf = (c: CSPC | null): PoolSpec[] =>
    Array.isArray(c?.spec?.pools) ? c.spec.pools.filter((p) => p && typeof p === "object") : [];
  const inNamespace = (o: KubeObject) => (o.metadata?.namespace ?? namespace) === namespace;

  let nodes = files.nodes;
  if (!nodes) {
    nodes = assumedNodes([...poolsOf(proposed), ...poolsOf(stored)]);
    notes.push(
      `no --nodes: each distinct nodeSelector is assumed to select one node of its own (${nodes.map((n) => n.metadata.name).join(", ") || "none"})`,
    );
  }
  let blockDevices: KubeObject[];
  if (files.cluster) {
    const given = ofKind(files.cluster, KIND.blockDevice);
    blockDevices = given.filter(inNamespace).map((o) => inNamespaceOf(o, namespace));
    const elsewhere = [
      ...new Set(given.filter((o) => !inNamespace(o)).map((o) => o.metadata.namespace!)),
    ].sort();
    if (elsewhere.length > 0) {
      notes.push(
        `${subject} is in namespace ${namespace}, but ${given.length - blockDevices.length} of the BlockDevices given are in ${elsewhere.join(", ")}: ` +
          `its devices are looked up in ${namespace} only${blockDevices.length === 0 ? ", where none are given" : ""}`,
      );
    }
  } else {
    blockDevices = assumedDevices(proposed, stored, nodes, namespace);
    notes.push(
      "no --block-devices: every device is assumed to exist, be Active, empty, unclaimed and on its pool's node",
    );
  }
  const cluster = files.cluster ?? [];
  const claims = ofKind(cluster, KIND.blockDeviceClaim)
    .filter(inNamespace)
    .map((o) => inNamespaceOf(o, namespace));
  let cspis = (files.cspis ?? [])
    .filter((c) => inNamespace(c) && c.metadata.labels?.[LABEL.cspc] === proposed.metadata.name)
    .map((o) => inNamespaceOf(o, namespace));
  if (stored && cspis.length === 0) {
    cspis = assumedPools(stored, namespace, {
      blockDevices: blockDevices as ClusterFacts["blockDevices"],
      claims: claims as ClusterFacts["claims"],
      nodes,
      cspis: [],
      replicas: [],
    });
    notes.push(
      "no CStorPoolInstances given: the pools of --old are assumed built, ONLINE and without volumes (give them with --block-devices to check pool removal)",
    );
  }
  const replicas = (files.replicas ?? []).filter(inNamespace).map((o) => inNamespaceOf(o, namespace));
  return {
    blockDevices: blockDevices as ClusterFacts["blockDevices"],
    claims: claims as ClusterFacts["claims"],
    nodes,
    cspis,
    replicas,
  };
}

/** An object of --block-devices, of the types the hooks read; else the object, the field and the fix. */
function readable<K extends typeof TYPE_KEY.cspi | typeof TYPE_KEY.cvr>(object: KubeObject, typeKey: K) {
  if (isReadableAs(object, typeKey)) return object;
  const where = `${object.kind} ${object.metadata.namespace ? `${object.metadata.namespace}/` : ""}${object.metadata.name ?? ""}`;
  throw new InputError(
    `${where} in --block-devices: ${readProblem(object) ?? "is not readable"}: fix it (kubectl get -o yaml writes it whole) or leave it out`,
  );
}

function inNamespaceOf<T extends KubeObject>(object: T, namespace: string): T {
  return object.metadata?.namespace ? object : { ...object, metadata: { ...object.metadata, namespace } };
}

function hostnameOf(selector: Record<string, string>): string | undefined {
  const match = Object.keys(selector).find((k) => k.toLowerCase() === LABEL.hostname.toLowerCase());
  return match ? selector[match] : undefined;
}

function assumedNodes(pools: readonly PoolSpec[]): KubeObject[] {
  const bySelector = new Map<string, KubeObject>();
  for (const pool of pools) {
    const selector = pool.nodeSelector && typeof pool.nodeSelector === "object" ? pool.nodeSelector : {};
    const id = JSON.stringify(Object.entries(selector).sort());
    if (bySelector.has(id)) continue;
    const name =
      hostnameOf(selector) ??
      `node-selected-by-${Object.entries(selector)
        .sort()
        .map(([k, v]) => `${k}=${v}`)
        .join(",")}`;
    bySelector.set(id, {
      apiVersion: "v1",
      kind: KIND.node,
      metadata: { name, labels: { [LABEL.hostname]: name, ...selector } },
    });
  }
  return [...bySelector.values()];
}

/** Healthy free devices, each on the node its pool in the new spec selects (a moved pool's devices moved too). */
function assumedDevices(
  proposed: CSPC,
  stored: CSPC | null,
  nodes: KubeObject[],
  namespace: string,
): KubeObject[] {
  const devices = new Map<string, KubeObject>();
  for (const cspc of [proposed, stored]) {
    const pools = Array.isArray(cspc?.spec?.pools) ? cspc.spec.pools : [];
    const facts = { blockDevices: [], claims: [], nodes, cspis: [] };
    pools.forEach((pool, i) => {
      if (!pool || typeof pool !== "object") return;
      const host =
        resolveNode(pool, i, inventoryOf({ ...cspc!, metadata: { ...cspc!.metadata, namespace } }, facts))
          .host ??
        hostnameOf(pool.nodeSelector ?? {}) ??
        "";
      for (const group of Array.isArray(pool.raidGroups) ? pool.raidGroups : []) {
        for (const d of Array.isArray(group?.blockDevices) ? group.blockDevices : []) {
          if (!d?.blockDeviceName || devices.has(d.blockDeviceName)) continue;
          devices.set(d.blockDeviceName, {
            apiVersion: "openebs.io/v1alpha1",
            kind: KIND.blockDevice,
            metadata: { name: d.blockDeviceName, namespace, labels: { [LABEL.hostname]: host } },
            spec: {
              ...(d.capacity !== undefined ? { capacity: { storage: d.capacity } } : {}),
              ...(d.devLink ? { path: d.devLink } : {}),
            },
            status: { state: "Active", claimState: "Unclaimed" },
          });
        }
      }
    });
  }
  return [...devices.values()];
}

/** The stored CSPC's pools as cspc-sync would have built them. */
function assumedPools(stored: CSPC, namespace: string, facts: ClusterFacts): CSPI[] {
  const inventory = inventoryOf({ ...stored, metadata: { ...stored.metadata, namespace } }, facts);
  // Pools on device sets are left out: their CSPIs are named and placed from PVCs, which offline files do not have.
  return (stored.spec?.pools ?? []).flatMap((pool, i) => {
    if (!isBlockPool(pool)) return [];
    const host = resolveNode(pool, i, inventory).host ?? hostnameOf(pool.nodeSelector ?? {}) ?? "";
    const name = cspiName(namespace, stored.metadata.name ?? "", devicesOf(pool.raidGroups));
    return [
      {
        apiVersion: "openebs.io/v1alpha1",
        kind: KIND.cspi,
        metadata: {
          name,
          namespace,
          labels: { [LABEL.cspc]: stored.metadata.name ?? "", [LABEL.hostname]: host },
        },
        spec: buildCspiSpec(pool, host, inventory),
        status: { phase: "ONLINE", provisionedReplicas: 0 },
      },
    ];
  });
}
