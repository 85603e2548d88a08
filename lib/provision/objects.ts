// The built-in objects the StorageClass path reads and writes, with only the fields it uses. They come from
// the API server, so their types are Kubernetes'; every field is optional here and read where it is used.
import type { KubeObject, ObjectMap } from "../../api/types.js";
import { objectsOf } from "../request.js";

export interface StorageClass extends KubeObject {
  provisioner?: string;
  parameters?: Record<string, string>;
  reclaimPolicy?: string;
  allowVolumeExpansion?: boolean;
  mountOptions?: string[];
  volumeBindingMode?: string;
}

export interface PersistentVolumeClaim extends KubeObject {
  spec?: {
    storageClassName?: string;
    accessModes?: string[];
    resources?: { requests?: Record<string, string> };
    volumeMode?: string;
    volumeName?: string;
    selector?: unknown;
    dataSource?: { kind?: string; name?: string };
    dataSourceRef?: { kind?: string; name?: string };
  };
}

export interface ClaimReference {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
}

export interface IscsiSource {
  targetPortal: string;
  iqn: string;
  lun: number;
  fsType?: string;
  readOnly?: boolean;
}

export interface PersistentVolumeSpec {
  capacity?: Record<string, string>;
  accessModes?: string[];
  volumeMode?: string;
  storageClassName?: string;
  persistentVolumeReclaimPolicy?: string;
  mountOptions?: string[];
  claimRef?: ClaimReference;
  iscsi?: IscsiSource;
}

export interface PersistentVolume extends KubeObject {
  spec?: PersistentVolumeSpec;
  status?: { phase?: string };
}

export interface CoreEvent extends KubeObject {
  involvedObject: ClaimReference;
  reason: string;
  message: string;
  type: "Normal" | "Warning";
  source: { component: string };
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
}

/**
 * The built-in objects of one type in a request. Their types above declare every field optional and the
 * code checks each field where it reads it, so any object the API server sends is one of them.
 */
export function builtinsOf<T extends PersistentVolumeClaim | PersistentVolume>(map: ObjectMap, typeKey: string): T[] {
  return objectsOf(map, typeKey) as T[];
}
