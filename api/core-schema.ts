// The built-in objects the StorageClass path reads and writes, described by the fields it uses (types only:
// every field is optional, and the rest of the object is kept). They come from the API server, so an object
// that does not fit was never stored: a parent is refused with a 400, an attachment or related object is set
// aside as unreadable (lib/request.ts).
import { Type, type Static, type TProperties } from "@sinclair/typebox";
import { ObjectMetaSchema } from "./schema.js";
import type { KubeObject } from "./types.js";

const open = { additionalProperties: true } as const;
const Strings = Type.Array(Type.String());
const StringRecord = Type.Record(Type.String(), Type.String());
const kubeObject = <T extends TProperties>(fields: T) =>
  Type.Object(
    { apiVersion: Type.String(), kind: Type.String(), metadata: ObjectMetaSchema, ...fields },
    open,
  );

export const StorageClassSchema = kubeObject({
  provisioner: Type.Optional(Type.String()),
  parameters: Type.Optional(StringRecord),
  reclaimPolicy: Type.Optional(Type.String()),
  allowVolumeExpansion: Type.Optional(Type.Boolean()),
  mountOptions: Type.Optional(Strings),
  volumeBindingMode: Type.Optional(Type.String()),
});

const ObjectReferenceSchema = Type.Object(
  {
    apiVersion: Type.Optional(Type.String()),
    kind: Type.Optional(Type.String()),
    namespace: Type.Optional(Type.String()),
    name: Type.Optional(Type.String()),
    uid: Type.Optional(Type.String()),
  },
  open,
);

export const PersistentVolumeClaimSchema = kubeObject({
  spec: Type.Optional(
    Type.Object(
      {
        storageClassName: Type.Optional(Type.String()),
        accessModes: Type.Optional(Strings),
        resources: Type.Optional(Type.Object({ requests: Type.Optional(StringRecord) }, open)),
        volumeMode: Type.Optional(Type.String()),
        volumeName: Type.Optional(Type.String()),
        selector: Type.Optional(Type.Unknown()),
        dataSource: Type.Optional(ObjectReferenceSchema),
        dataSourceRef: Type.Optional(ObjectReferenceSchema),
      },
      open,
    ),
  ),
  status: Type.Optional(
    Type.Object({ phase: Type.Optional(Type.String()), capacity: Type.Optional(StringRecord) }, open),
  ),
});

const NodeSelectorTermSchema = Type.Object(
  {
    matchExpressions: Type.Optional(
      Type.Array(
        Type.Object({ key: Type.String(), operator: Type.String(), values: Type.Optional(Strings) }, open),
      ),
    ),
  },
  open,
);

const IscsiSourceSchema = Type.Object(
  {
    targetPortal: Type.String(),
    iqn: Type.String(),
    lun: Type.Integer(),
    fsType: Type.Optional(Type.String()),
    readOnly: Type.Optional(Type.Boolean()),
    initiatorName: Type.Optional(Type.String()),
    chapAuthSession: Type.Optional(Type.Boolean()),
    secretRef: Type.Optional(
      Type.Object({ name: Type.String(), namespace: Type.Optional(Type.String()) }, open),
    ),
  },
  open,
);

export const PersistentVolumeSchema = kubeObject({
  spec: Type.Optional(
    Type.Object(
      {
        capacity: Type.Optional(StringRecord),
        accessModes: Type.Optional(Strings),
        volumeMode: Type.Optional(Type.String()),
        storageClassName: Type.Optional(Type.String()),
        persistentVolumeReclaimPolicy: Type.Optional(Type.String()),
        mountOptions: Type.Optional(Strings),
        claimRef: Type.Optional(ObjectReferenceSchema),
        iscsi: Type.Optional(IscsiSourceSchema),
        /** A local PV: the device or directory on its node (pools on device sets use its path, docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md). */
        local: Type.Optional(Type.Object({ path: Type.String() }, open)),
        nodeAffinity: Type.Optional(
          Type.Object(
            {
              required: Type.Optional(
                Type.Object({ nodeSelectorTerms: Type.Array(NodeSelectorTermSchema) }, open),
              ),
            },
            open,
          ),
        ),
      },
      open,
    ),
  ),
  status: Type.Optional(Type.Object({ phase: Type.Optional(Type.String()) }, open)),
});

export const EventSchema = kubeObject({
  reason: Type.Optional(Type.String()),
  message: Type.Optional(Type.String()),
  type: Type.Optional(Type.String()),
  firstTimestamp: Type.Optional(Type.String()),
});

export type StorageClass = KubeObject & Static<typeof StorageClassSchema>;
export type PersistentVolumeClaim = KubeObject & Static<typeof PersistentVolumeClaimSchema>;
export type ClaimReference = Static<typeof ObjectReferenceSchema>;
export type PersistentVolume = KubeObject & Static<typeof PersistentVolumeSchema>;
export type PersistentVolumeSpec = NonNullable<PersistentVolume["spec"]>;
/** An Event as read back: the fields the hook compares, each optional. */
export type ObservedEvent = KubeObject & Static<typeof EventSchema>;

/** The Event the hooks write on a waiting PVC. */
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
