// The StorageClass policy of the default install (api/storageclass-policy.ts), run by a real kube-apiserver on the
// classes the CSI driver itself judges (csi/controller/request.ts): a class the driver would refuse a claim of is
// refused at creation, in the driver's words; a class it serves is accepted; a class of another provisioner is
// never judged.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { parse } from "yaml";
import { CSI } from "../../api/constants.js";
import { FS_TYPE_PARAMETER } from "../../api/csi-class.js";
import { CsiError } from "../../csi/errors.js";
import { unservedCapability, volumeParameters } from "../../csi/controller/request.js";
import { projectInstalled, repoPath, waitUntil, type KubeCluster } from "../../testkit/kube.js";

const SAMPLE = parse(
  readFileSync(repoPath("metacontroller/samples/volumes/storageclass-cstor-csi.yaml"), "utf8"),
) as { parameters: Record<string, string> };
const POOLS = { cstorPoolCluster: "cstor-pool-mirror", replicaCount: "3" };

/** Each class's parameters; the driver's judgement of them is what the apiserver must agree with. */
const CLASSES: Record<string, Record<string, string>> = {
  sample: SAMPLE.parameters,
  "padded-leading-zero-default-fs": {
    cstorPoolCluster: " pools.a-1 ",
    replicaCount: "05",
    [FS_TYPE_PARAMETER]: "",
  },
  "xfs-and-other-kubernetes-keys": {
    ...POOLS,
    replicaCount: "1",
    [FS_TYPE_PARAMETER]: "xfs",
    "csi.storage.k8s.io/controller-expand-secret-name": "x",
  },
  "misspelt-key": { cstorPoolCluster: "pools", replicacount: "3" },
  "decorator-fs-key": { ...POOLS, fsType: "ext4" },
  "decorator-cas-type": { ...POOLS, "cas-type": "cstor" },
  "no-pool-cluster": { replicaCount: "3" },
  "pool-cluster-with-namespace": { ...POOLS, cstorPoolCluster: "openebs/pools" },
  "pool-cluster-upper-case": { ...POOLS, cstorPoolCluster: "Pools" },
  "pool-cluster-too-long": { ...POOLS, cstorPoolCluster: "a".repeat(57) },
  "pool-cluster-longest": { ...POOLS, cstorPoolCluster: "a".repeat(56) },
  "no-replica-count": { cstorPoolCluster: "pools" },
  "replica-count-6": { ...POOLS, replicaCount: "6" },
  "replica-count-0": { ...POOLS, replicaCount: "0" },
  "replica-count-signed": { ...POOLS, replicaCount: "+3" },
  "replica-count-decimal": { ...POOLS, replicaCount: "3.0" },
  "replica-count-word": { ...POOLS, replicaCount: "three" },
  "fs-ntfs": { ...POOLS, [FS_TYPE_PARAMETER]: "ntfs" },
};

/** What the driver answers a claim of the class: undefined when it serves it, else its refusal. */
function driverRefusal(parameters: Record<string, string>): { message: string; words: string } | undefined {
  try {
    volumeParameters(parameters);
  } catch (error) {
    if (!(error instanceof CsiError)) throw error;
    return { message: error.message, words: error.message };
  }
  const fsType = parameters[FS_TYPE_PARAMETER] ?? "";
  const why = unservedCapability({ access_mode: { mode: "SINGLE_NODE_WRITER" }, mount: { fs_type: fsType } });
  // The policy names the class's parameter where the driver names the capability it became.
  return why === undefined ? undefined : { message: why, words: why.slice(why.indexOf(": ") + 2) };
}

const storageClass = (
  name: string,
  parameters: Record<string, string>,
  provisioner: string = CSI.driverName,
) => ({
  apiVersion: "storage.k8s.io/v1",
  kind: "StorageClass",
  metadata: { name },
  provisioner,
  parameters,
});

describe("the StorageClass policy in a real kube-apiserver, on the CSI driver's own judgement", function () {
  this.timeout(180_000);
  let cluster: KubeCluster;

  /** A server-side dry-run create: every admission step, nothing stored. */
  const dryRunCreate = (object: object) =>
    cluster.request(cluster.admin, "POST", "/apis/storage.k8s.io/v1/storageclasses?dryRun=All", object);

  before(async () => {
    cluster = await projectInstalled();
    // The apiserver starts enforcing a policy a moment after it is created, and its failurePolicy is Ignore.
    const probe = storageClass("probe", CLASSES["no-pool-cluster"]);
    await waitUntil(
      async () => (await dryRunCreate(probe)).status === 422,
      30_000,
      () => "the StorageClass policy is never enforced",
    );
  });

  for (const [name, parameters] of Object.entries(CLASSES)) {
    const refusal = driverRefusal(parameters);
    it(`${name}: ${refusal ? `refused (${refusal.message})` : "accepted"}`, async () => {
      const res = await dryRunCreate(storageClass(name, parameters));
      if (!refusal) {
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        return;
      }
      expect(res.status, JSON.stringify(res.body)).to.equal(422);
      expect(res.body.message).to.include(`StorageClass ${name}: `);
      expect(res.body.message).to.include(refusal.words);
      expect(res.body.message).to.include("cannot be edited: fix the manifest and apply it again");
    });
  }

  it("judges only the driver's classes: another provisioner's parameters are its own", async () => {
    const other = storageClass("local", { anything: "goes" }, "kubernetes.io/no-provisioner");
    const res = await dryRunCreate(other);
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
  });
});
