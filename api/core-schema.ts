// The built-in objects the hooks read: the PVCs and PVs of a pool's device sets
// (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md), described by the fields cspc-sync uses
// (types only: every field is optional, and the rest of the object is kept). They come from the API server, so an
// object that does not fit was never stored: a child or related object is set aside as unreadable (lib/request.ts).
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

export const PersistentVolumeClaimSchema = kubeObject({
  spec: Type.Optional(
    Type.Object(
      {
        storageClassName: Type.Optional(Type.String()),
        accessModes: Type.Optional(Strings),
        resources: Type.Optional(Type.Object({ requests: Type.Optional(StringRecord) }, open)),
        volumeMode: Type.Optional(Type.String()),
        volumeName: Type.Optional(Type.String()),
      },
      open,
    ),
  ),
  status: Type.Optional(Type.Object({ phase: Type.Optional(Type.String()) }, open)),
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

export const PersistentVolumeSchema = kubeObject({
  spec: Type.Optional(
    Type.Object(
      {
        capacity: Type.Optional(StringRecord),
        volumeMode: Type.Optional(Type.String()),
        /** A local PV: the device or directory on its node (a pool's device, for pools on device sets). */
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
});

export type PersistentVolumeClaim = KubeObject & Static<typeof PersistentVolumeClaimSchema>;
export type PersistentVolume = KubeObject & Static<typeof PersistentVolumeSchema>;
