// A StorageClass of the CSI driver, as the driver judges it (docs/adr/0047-the-csi-driver-one-writer-per-volume.md):
// the parameters it takes, their bounds and what each refusal says. One definition for the driver's controller,
// which refuses a bad class when a claim of it is provisioned (csi/controller/request.ts), and the admission
// policy, which refuses it at `kubectl apply` (api/storageclass-policy.ts).
import { LIMITS } from "./constants.js";

/** The parameters the driver takes. */
export const CLASS_PARAMETERS = ["cstorPoolCluster", "replicaCount"] as const;
/** Kubernetes' own keys (the sidecars' metadata, fstype, secrets): never the driver's to judge. */
export const KUBERNETES_PARAMETER_PREFIX = "csi.storage.k8s.io/";
/** The class's filesystem, which external-provisioner hands to CreateVolume as the mount capability's fs_type. */
export const FS_TYPE_PARAMETER = `${KUBERNETES_PARAMETER_PREFIX}fstype`;
/** The filesystems the node makes and grows; an empty fs_type leaves the choice to the node (the first). */
export const FILESYSTEMS = ["ext4", "xfs"] as const;

/** What a refusal says after naming the parameter and its value. */
export const PARAMETER_FIX = {
  unknown: `are not served: a cStor StorageClass takes ${CLASS_PARAMETERS.join(" and ")} (${FS_TYPE_PARAMETER} and the node-stage secret go to the sidecars)`,
  cstorPoolCluster: "name the CStorPoolCluster (in the driver's namespace) whose pools hold the volumes",
  replicaCount: `write how many pools hold each volume, "1" to "${LIMITS.replicasPerVolume}"`,
  fsType: `write ${FILESYSTEMS.join(" or ")}`,
} as const;
