// Risky but legal: things the webhook and `cstor-pool validate` point out without refusing the change.
import { LABEL } from "../../api/constants.js";
import type { KubeObject, PoolSpec } from "../../api/types.js";
import { poolLabel } from "./pool-spec.js";

/** Node label keys every kubelet sets; a selector key that differs from one only in case is a typo. */
export const WELL_KNOWN_NODE_LABELS = [
  LABEL.hostname,
  "kubernetes.io/os",
  "kubernetes.io/arch",
  "node.kubernetes.io/instance-type",
  "topology.kubernetes.io/region",
  "topology.kubernetes.io/zone",
] as const;

/**
 * Label keys are case-sensitive. The seed examples' kubernetes.io/hostName selects nothing on a real cluster
 * (the kubelet sets kubernetes.io/hostname); when it does select a node, some node carries a hand-made twin
 * label, which breaks as soon as that node is replaced.
 */
export function selectorKeyCaseWarnings(
  pool: PoolSpec,
  index: number,
  nodes: readonly KubeObject[],
): string[] {
  const known = knownLabelKeys(nodes);
  const out: string[] = [];
  for (const key of Object.keys(pool.nodeSelector ?? {}).sort()) {
    const twin = known.find((k) => k !== key && k.toLowerCase() === key.toLowerCase());
    if (twin) {
      out.push(
        `${poolLabel(pool, index)} uses label key ${key}; label keys are case-sensitive and nodes carry ${twin}: use ${twin}`,
      );
    }
  }
  return out;
}

/**
 * The well-known label keys and every label key of these nodes, sorted. A review asks once per changed pool
 * with the same (read-only) list of nodes, so the keys are gathered once per list, not once per pool: a
 * CREATE of 1,000 pools on 1,000 nodes was a million label reads.
 */
const labelKeysOfNodes = new WeakMap<readonly KubeObject[], string[]>();

function knownLabelKeys(nodes: readonly KubeObject[]): string[] {
  let keys = labelKeysOfNodes.get(nodes);
  if (!keys) {
    const known = new Set<string>(WELL_KNOWN_NODE_LABELS);
    for (const node of nodes) for (const key of Object.keys(node.metadata.labels ?? {})) known.add(key);
    keys = [...known].sort();
    labelKeysOfNodes.set(nodes, keys);
  }
  return keys;
}
