// What the controller makes of a request before it touches the API (csi/controller/request.ts, volume.ts): the
// volume id a CSI name becomes, the StorageClass's parameters, the sizes and capabilities a cStor volume serves,
// whether an existing volume answers a CreateVolume again, and what a volume not yet Bound waits for.
import { status } from "@grpc/grpc-js";
import { expect } from "chai";
import { CSI } from "../../api/constants.js";
import type { CV, CVC } from "../../api/types.js";
import {
  requestedBytes,
  unservedCapability,
  volumeIdFor,
  volumeParameters,
} from "../../csi/controller/request.js";
import { mismatch, readiness, volumeConfig } from "../../csi/controller/volume.js";
import { refusalOf as refusal } from "../../testkit/csi-refusal.js";

const MiB = 1024 * 1024;

describe("csi: the controller's judgement of a request", () => {
  it("keeps external-provisioner's pvc-<uid> as the volume id, and hashes a name that cannot name a Service", () => {
    expect(volumeIdFor("pvc-3f1c2a9e-5b7d-4c1e-9a2f-6d8e0b4c7a11")).to.equal(
      "pvc-3f1c2a9e-5b7d-4c1e-9a2f-6d8e0b4c7a11",
    );
    const long = `sanity-controller-create-maxlen-${"a".repeat(96)}`;
    for (const name of [long, "Sanity Volume", "9lives"]) {
      expect(volumeIdFor(name)).to.match(/^csi-[0-9a-f]{32}$/);
      expect(volumeIdFor(name), "the same name, the same id").to.equal(volumeIdFor(name));
    }
    expect(volumeIdFor(long)).not.to.equal(volumeIdFor(`${long}b`));
  });

  it("takes the class's pool cluster and replica count, records the claim, and names any other key", () => {
    expect(
      volumeParameters({
        cstorPoolCluster: "pools",
        replicaCount: "3",
        "csi.storage.k8s.io/pvc/name": "data",
        "csi.storage.k8s.io/pvc/namespace": "shop",
        "csi.storage.k8s.io/fstype": "xfs",
      }),
    ).to.deep.equal({ cstorPoolCluster: "pools", replicaCount: 3, claim: "shop/data" });
    const typo = refusal(() =>
      volumeParameters({ cstorPoolCluster: "pools", replicacount: "3", fsType: "xfs" }),
    );
    expect(typo.code).to.equal(status.INVALID_ARGUMENT);
    expect(typo.message).to.match(/parameters fsType, replicacount are not served/);
    expect(
      refusal(() => volumeParameters({ cstorPoolCluster: "pools", replicaCount: "6" })).message,
    ).to.include('parameters.replicaCount is "6"');
    expect(refusal(() => volumeParameters({ replicaCount: "1" })).message).to.include(
      "parameters.cstorPoolCluster",
    );
  });

  it("sizes a volume in whole MiB: rounds up, defaults to 1Gi, and refuses what passes the limit", () => {
    expect(requestedBytes({ required_bytes: 10 * MiB + 1 }, "CreateVolume")).to.equal(11 * MiB);
    expect(requestedBytes(null, "CreateVolume")).to.equal(1024 * MiB);
    expect(requestedBytes({ limit_bytes: 100 * MiB + 5 }, "CreateVolume")).to.equal(100 * MiB);
    const over = refusal(() =>
      requestedBytes({ required_bytes: MiB + 1, limit_bytes: MiB + 1 }, "CreateVolume"),
    );
    expect(over.code).to.equal(status.OUT_OF_RANGE);
    expect(refusal(() => requestedBytes({ required_bytes: 2 * MiB, limit_bytes: MiB }, "x")).code).to.equal(
      status.INVALID_ARGUMENT,
    );
  });

  it("serves one node at a time, mount (ext4, xfs) or block", () => {
    const mode = (m: "SINGLE_NODE_WRITER" | "MULTI_NODE_MULTI_WRITER") => ({ access_mode: { mode: m } });
    expect(unservedCapability({ ...mode("SINGLE_NODE_WRITER"), block: {} })).to.equal(undefined);
    expect(unservedCapability({ ...mode("SINGLE_NODE_WRITER"), mount: { fs_type: "xfs" } })).to.equal(
      undefined,
    );
    expect(unservedCapability({ ...mode("MULTI_NODE_MULTI_WRITER"), block: {} })).to.match(
      /one node at a time/,
    );
    expect(unservedCapability({ ...mode("SINGLE_NODE_WRITER"), mount: { fs_type: "btrfs" } })).to.match(
      /btrfs/,
    );
    expect(unservedCapability({ ...mode("SINGLE_NODE_WRITER"), block: {}, mount: {} })).to.match(/not both/);
  });

  it("answers an existing volume again only for the same name, pool cluster, replicas and a size in range", () => {
    const parameters = { cstorPoolCluster: "pools", replicaCount: 2 };
    const cvc = volumeConfig({
      id: "pvc-1",
      name: "pvc-1",
      namespace: "openebs",
      parameters,
      bytes: 64 * MiB,
    });
    expect(cvc.spec.capacity).to.equal("64Mi");
    expect(cvc.metadata.annotations).to.deep.equal({ [CSI.nameAnnotation]: "pvc-1" });
    const same = { name: "pvc-1", parameters, range: { required_bytes: 64 * MiB } };
    expect(mismatch(cvc, same)).to.equal(undefined);
    expect(mismatch(cvc, { ...same, range: { required_bytes: 128 * MiB, limit_bytes: 128 * MiB } })).to.match(
      /outside the capacity range/,
    );
    expect(mismatch(cvc, { ...same, parameters: { ...parameters, replicaCount: 3 } })).to.match(
      /replicaCount 2/,
    );
    const byHand = { ...cvc, metadata: { ...cvc.metadata, annotations: {} } };
    expect(mismatch(byHand, same)).to.match(/was not made by this driver/);
  });

  it("says what a volume waits for until cvc-sync bound it and its target has an address", () => {
    const cvc: CVC = {
      ...volumeConfig({
        id: "pvc-2",
        name: "pvc-2",
        namespace: "openebs",
        parameters: { cstorPoolCluster: "pools", replicaCount: 3 },
        bytes: MiB,
      }),
      status: {
        phase: "Pending",
        reason: "NoPlacement",
        conditions: [
          {
            type: "Placed",
            status: "False",
            reason: "NoPlacement",
            message: "3 replica(s) to place, but only 2 of the 2 pool(s) can take one now",
            lastTransitionTime: "2026-11-29T00:00:00Z",
          },
        ],
      },
    };
    expect(readiness(cvc, undefined)).to.deep.equal({
      ready: false,
      waiting:
        "CStorVolumeConfig openebs/pvc-2 is Pending (NoPlacement): 3 replica(s) to place, but only 2 of the 2 pool(s) can take one now; waiting for it to be Bound",
    });
    const bound = { ...cvc, status: { phase: "Bound" as const } };
    expect(readiness(bound, undefined)).to.include({ ready: false });
    const cv = {
      metadata: { name: "pvc-2" },
      spec: { targetPortal: "10.96.0.7:3260", iqn: "iqn.2016-09.com.openebs.cstor:pvc-2" },
    } as CV;
    expect(readiness(bound, cv)).to.deep.equal({
      ready: true,
      volume: {
        volume_id: "pvc-2",
        capacity_bytes: MiB,
        volume_context: {
          targetPortal: "10.96.0.7:3260",
          iqn: "iqn.2016-09.com.openebs.cstor:pvc-2",
          lun: "0",
        },
      },
    });
  });
});
