// A cStor StorageClass's parameters, checked. A class's parameters cannot be edited, so the message says how to
// replace it. The class is judged as a whole: every problem is named, not only the first.
import { LIMITS, PROVISIONING } from "../../api/constants.js";
import type { StorageClass } from "../../api/core-schema.js";

/** Where a CStorPoolCluster named without a namespace is: the install's namespace. */
export const DEFAULT_POOL_NAMESPACE = "openebs";

const FS_TYPES: readonly string[] = PROVISIONING.fsTypes;
export const DEFAULT_FS_TYPE = PROVISIONING.defaultFsType;
const UPSTREAM_CAS_TYPE = PROVISIONING.upstreamCasType;
const KNOWN_PARAMETERS: readonly string[] = PROVISIONING.parameters;

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export interface ClassParameters {
  poolNamespace: string;
  cstorPoolCluster: string;
  replicaCount: number;
  fsType: string;
}

/** `problem`: every reason the class cannot provision, each naming the field and the fix, in one message. */
export type ClassCheck = { ok: true; parameters: ClassParameters } | { ok: false; problem: string };

/** The class's parameters, or every reason it cannot provision, each naming the field and the fix. */
export function checkClass(storageClass: StorageClass): ClassCheck {
  if (storageClass.provisioner !== PROVISIONING.provisioner) {
    return refused(storageClass, [
      `it carries the label ${PROVISIONING.classLabel} but its provisioner is ${JSON.stringify(storageClass.provisioner ?? "")}: remove the label, or use provisioner ${PROVISIONING.provisioner}`,
    ]);
  }
  const parameters = storageClass.parameters ?? {};
  const poolCluster = poolClusterOf(parameters.cstorPoolCluster);
  const replicaCount = replicaCountOf(parameters.replicaCount);
  const fsType = parameters.fsType ?? DEFAULT_FS_TYPE;
  const problems = [
    ...unservedParameters(parameters),
    ...(typeof poolCluster === "string" ? [poolCluster] : []),
    ...(typeof replicaCount === "string" ? [replicaCount] : []),
    ...(FS_TYPES.includes(fsType)
      ? []
      : [
          `parameters.fsType is ${JSON.stringify(fsType)}; write one of ${FS_TYPES.join(", ")} (default ${DEFAULT_FS_TYPE})`,
        ]),
    ...(storageClass.reclaimPolicy !== undefined && !["Delete", "Retain"].includes(storageClass.reclaimPolicy)
      ? [`reclaimPolicy ${storageClass.reclaimPolicy} is not served: write Delete or Retain`]
      : []),
  ];
  if (problems.length > 0 || typeof poolCluster === "string" || typeof replicaCount === "string")
    return refused(storageClass, problems);
  return { ok: true, parameters: { ...poolCluster, replicaCount, fsType } };
}

/** Parameters this provisioner does not know, and an upstream cas-type it does not serve. */
function unservedParameters(parameters: Record<string, string>): string[] {
  const problems = Object.keys(parameters)
    .sort()
    .filter((key) => !KNOWN_PARAMETERS.includes(key))
    .map((key) => `parameters.${key} is not a cStor parameter (they are ${KNOWN_PARAMETERS.join(", ")})`);
  const casType = parameters["cas-type"];
  if (casType !== undefined && casType !== UPSTREAM_CAS_TYPE) {
    problems.push(
      `parameters.cas-type is ${JSON.stringify(casType)}; only "${UPSTREAM_CAS_TYPE}" is served here: remove it or write "${UPSTREAM_CAS_TYPE}"`,
    );
  }
  return problems;
}

/** How many pools hold each volume; a string is what is wrong with it. */
function replicaCountOf(text: string | undefined): number | string {
  if (text === undefined)
    return `parameters.replicaCount is missing: write how many pools hold each volume, "1" to "${LIMITS.replicasPerVolume}" (e.g. "3")`;
  const count = /^[0-9]+$/.test(text.trim()) ? Number(text.trim()) : undefined;
  if (count === undefined || count < 1 || count > LIMITS.replicasPerVolume)
    return `parameters.replicaCount is ${JSON.stringify(text)}; write a whole number from "1" to "${LIMITS.replicasPerVolume}"`;
  return count;
}

function refused(storageClass: StorageClass, problems: string[]): ClassCheck {
  return {
    ok: false,
    problem:
      `StorageClass ${storageClass.metadata.name} cannot provision: ${problems.join("; ")}. ` +
      "A class's provisioner and parameters cannot be edited: create a new class, or delete this one and create it again.",
  };
}

/** "<name>" (in the install's namespace) or "<namespace>/<name>"; a string is what is wrong with it. */
function poolClusterOf(
  value: string | undefined,
): { poolNamespace: string; cstorPoolCluster: string } | string {
  if (value === undefined || value.trim() === "") {
    return `parameters.cstorPoolCluster is missing: name the CStorPoolCluster whose pools hold the volumes, "<name>" (in ${DEFAULT_POOL_NAMESPACE}) or "<namespace>/<name>"`;
  }
  const parts = value.trim().split("/");
  const [poolNamespace, cstorPoolCluster] = parts.length === 2 ? parts : [DEFAULT_POOL_NAMESPACE, parts[0]];
  if (
    parts.length > 2 ||
    !DNS_LABEL.test(poolNamespace) ||
    !DNS_SUBDOMAIN.test(cstorPoolCluster) ||
    cstorPoolCluster.length > LIMITS.cspcNameLength
  ) {
    return `parameters.cstorPoolCluster is ${JSON.stringify(value)}; write "<name>" or "<namespace>/<name>" with a CStorPoolCluster name (lowercase letters, digits, "-" and ".", at most ${LIMITS.cspcNameLength} characters)`;
  }
  return { poolNamespace, cstorPoolCluster };
}
