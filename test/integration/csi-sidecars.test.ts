// The CSI driver under the real sidecars (docs/adr/0047-the-csi-driver-one-writer-per-volume.md):
// external-provisioner v6, external-attacher v4 and external-resizer v2, built from their Go modules by
// scripts/csi-env.sh, run as the shipped cstor-csi-controller ServiceAccount against a real kube-apiserver with
// kube-controller-manager's PV controllers, beside the driver's controller, the hook server under the
// Metacontroller emulator and two real node daemons on zfs-fuse nodes (testkit/csi-world.ts). A PVC of the sample
// class becomes a Bound PV whose CSI source carries the volume's context and its CHAP Secret as node-stage secret;
// a Block claim too; a VolumeAttachment publishes the volume to its node, and a second node's is refused until the
// first detaches; a larger claim grows the CStorVolumeConfig and its replicas, then waits for the node's
// filesystem; a deleted claim deletes the volume. The kubelet's part (CSINode objects, VolumeAttachments made by
// the attach/detach controller for a pod's node) is played here; the node side runs in user-mode Linux.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { parse } from "yaml";
import { CSI, LABEL } from "../../api/constants.js";
import type { CV, CVC, CVR } from "../../api/types.js";
import { CsiWorld } from "../../testkit/csi-world.js";
import { installProject, ownCluster, repoPath, waitUntil, type OwnCluster } from "../../testkit/kube.js";
import { LoggedProcess } from "../../testkit/logged-process.js";

const NS = "shop";
const DEVICE_MIB = 2048;
const WAIT_MS = 180_000;
const SAMPLE_CLASS = parse(
  readFileSync(repoPath("metacontroller/samples/volumes/storageclass-cstor-csi.yaml"), "utf8"),
) as Record<string, any>;

/** The sidecars' binaries, from scripts/csi-env.sh (built once into the cache). */
async function sidecarBinaries(): Promise<Record<string, string>> {
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(
      "bash",
      [repoPath("scripts/csi-env.sh"), "--print-env"],
      { timeout: 40 * 60_000 },
      (error, out, err) => (error ? reject(new Error(`scripts/csi-env.sh: ${err}`)) : resolve(out)),
    ),
  );
  return Object.fromEntries(
    stdout
      .trim()
      .split("\n")
      .map((line) => line.split("=", 2) as [string, string]),
  );
}

describe("integration: the CSI driver under external-provisioner, -attacher and -resizer", function () {
  this.timeout(25 * 60_000);
  let cluster: OwnCluster;
  let world: CsiWorld;
  const sidecars: LoggedProcess[] = [];
  const tails = () => sidecars.map((s) => s.tail(15)).join("") + world?.tails();

  const request = async (method: string, path: string, body?: unknown, type?: string): Promise<any> => {
    const response = await cluster.request(cluster.admin, method, path, body, type);
    return response.status === 404 ? undefined : response.body;
  };
  const pvc = (name: string) => request("GET", `/api/v1/namespaces/${NS}/persistentvolumeclaims/${name}`);
  const pv = (name: string) => request("GET", `/api/v1/persistentvolumes/${name}`);
  const attachment = (name: string) => request("GET", `/apis/storage.k8s.io/v1/volumeattachments/${name}`);
  const eventually = async <T>(
    what: string,
    read: () => Promise<T>,
    done: (value: T) => boolean,
  ): Promise<T> => {
    let last: T | undefined;
    await waitUntil(
      async () => done((last = await read())),
      WAIT_MS,
      () => `${what} did not happen; last seen: ${JSON.stringify(last)}${tails()}`,
    );
    return last!;
  };
  const claim = async (name: string, size: string, volumeMode = "Filesystem") => {
    await world.apply({
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name, namespace: NS },
      spec: {
        accessModes: ["ReadWriteOnce"],
        storageClassName: SAMPLE_CLASS.metadata.name,
        volumeMode,
        resources: { requests: { storage: size } },
      },
    });
    return eventually(
      `PVC ${name} Bound`,
      () => pvc(name),
      (c) => c?.status?.phase === "Bound",
    );
  };
  const attach = (name: string, node: string, volume: string) =>
    world.apply({
      apiVersion: "storage.k8s.io/v1",
      kind: "VolumeAttachment",
      metadata: { name },
      spec: { attacher: CSI.driverName, nodeName: node, source: { persistentVolumeName: volume } },
    });

  before(async () => {
    cluster = await ownCluster({
      controllers: ["persistentvolume-binder", "pvc-protection", "pv-protection"],
    });
    await installProject(cluster);
    world = await CsiWorld.start({ cluster, deviceMiB: DEVICE_MIB });
    const binaries = await sidecarBinaries();
    const identity = await cluster.serviceAccount(world.namespace, "cstor-csi-controller");
    const common = [
      `--csi-address=${world.driver.socket}`,
      `--kubeconfig=${identity.kubeconfig}`,
      "--leader-election=false",
      "--v=3",
    ];
    const start = (label: string, binary: string, args: string[]) =>
      sidecars.push(
        new LoggedProcess(label, binary, [...common, ...args], { env: { PATH: process.env.PATH ?? "" } }),
      );
    start("external-provisioner", binaries.CSI_PROVISIONER, ["--extra-create-metadata", "--timeout=150s"]);
    start("external-attacher", binaries.CSI_ATTACHER, ["--timeout=60s"]);
    start("external-resizer", binaries.CSI_RESIZER, ["--timeout=150s", "--handle-volume-inuse-error=false"]);
    // What node-driver-registrar and the kubelet write on each node: the driver's node id there.
    await world.apply(
      ...world.nodeNames.map((node) => ({
        apiVersion: "storage.k8s.io/v1",
        kind: "CSINode",
        metadata: { name: node },
        spec: { drivers: [{ name: CSI.driverName, nodeID: node }] },
      })),
      { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
      { ...SAMPLE_CLASS, parameters: { ...SAMPLE_CLASS.parameters, ...world.parameters() } },
    );
  });

  after(async () => {
    for (const sidecar of sidecars) await sidecar.stop();
    await world?.stop();
    await cluster?.stop();
  });

  let volume: string;

  it("turns a PVC into a Bound PV: the CStorVolumeConfig pvc-<uid>, its context, its CHAP Secret to stage with", async () => {
    const bound = await claim("data", "64Mi");
    volume = bound.spec.volumeName;
    expect(volume).to.equal(`pvc-${bound.metadata.uid}`);
    const source = (await pv(volume)).spec.csi;
    const cv = (await world.get<CV>("cstorvolumes", volume))!;
    expect(source).to.deep.include({
      driver: CSI.driverName,
      volumeHandle: volume,
      fsType: "ext4",
      nodeStageSecretRef: { name: `${volume}-chap`, namespace: world.namespace },
    });
    // Beside the driver's context, the provisioner's own identity key.
    expect(source.volumeAttributes).to.include({
      targetPortal: cv.spec.targetPortal,
      iqn: cv.spec.iqn,
      lun: "0",
    });
    const cvc = (await world.get<CVC>("cstorvolumeconfigs", volume))!;
    expect(cvc.spec).to.deep.equal({ capacity: "64Mi", cstorPoolCluster: world.cspc, replicaCount: 2 });
    expect(cvc.metadata.annotations).to.include({ "cstor.openebs.io/claim": `${NS}/data` });
    expect(cv.metadata.annotations?.[CSI.publishedNodeAnnotation], "published nowhere yet").to.equal("");
    const block = await claim("raw", "32Mi", "Block");
    expect((await pv(block.spec.volumeName)).spec.volumeMode).to.equal("Block");
  });

  it("publishes through a VolumeAttachment to one node; a second node's waits, refused, until the first detaches", async () => {
    const [nodeA, nodeB] = world.nodeNames;
    const holder = async () =>
      (await world.get<CV>("cstorvolumes", volume))?.metadata.annotations?.[CSI.publishedNodeAnnotation];
    await attach("data-a", nodeA, volume);
    await eventually(
      "the attachment to node A",
      () => attachment("data-a"),
      (a) => a?.status?.attached === true,
    );
    expect(await holder()).to.equal(nodeA);
    await attach("data-b", nodeB, volume);
    const refused = await eventually(
      "node B's attachment refused",
      () => attachment("data-b"),
      (a) => Boolean(a?.status?.attachError),
    );
    expect(refused.status.attached).to.equal(false);
    expect(refused.status.attachError.message).to.include(`published to node ${nodeA}`);
    await request("DELETE", "/apis/storage.k8s.io/v1/volumeattachments/data-a");
    await eventually(
      "node A detached",
      () => attachment("data-a"),
      (a) => a === undefined,
    );
    await eventually(
      "the attachment to node B",
      () => attachment("data-b"),
      (a) => a?.status?.attached === true,
    );
    expect(await holder()).to.equal(nodeB);
    await request("DELETE", "/apis/storage.k8s.io/v1/volumeattachments/data-b");
    await eventually(
      "node B detached",
      () => attachment("data-b"),
      (a) => a === undefined,
    );
    expect(await holder()).to.equal("");
  });

  it("grows a volume when its claim grows: the CStorVolumeConfig, its replicas, the PV, then the node's turn", async () => {
    await request(
      "PATCH",
      `/api/v1/namespaces/${NS}/persistentvolumeclaims/data`,
      { spec: { resources: { requests: { storage: "96Mi" } } } },
      "application/merge-patch+json",
    );
    const grown = await eventually(
      "the PV at 96Mi",
      () => pv(volume),
      (p) => p?.spec?.capacity?.storage === "96Mi",
    );
    expect(grown.spec.capacity.storage).to.equal("96Mi");
    expect((await world.get<CVC>("cstorvolumeconfigs", volume))!.spec.capacity).to.equal("96Mi");
    const replicas = await world.list<CVR>("cstorvolumereplicas", `${LABEL.replicaVolume}=${volume}`);
    expect(replicas.map((r) => r.status?.capacity?.total)).to.deep.equal(["96Mi", "96Mi"]);
    const waiting = await eventually(
      "the claim waiting for the node's filesystem",
      () => pvc("data"),
      (c) =>
        (c?.status?.conditions ?? []).some((x: { type: string }) => x.type === "FileSystemResizePending"),
    );
    expect(waiting.status.capacity.storage, "the claim shows the new size once the node grew it").to.equal(
      "64Mi",
    );
  });

  it("deletes the volume when its claim is deleted", async () => {
    await request("DELETE", `/api/v1/namespaces/${NS}/persistentvolumeclaims/data`);
    await eventually(
      "the PV gone",
      () => pv(volume),
      (p) => p === undefined,
    );
    await eventually(
      "the CStorVolumeConfig gone",
      () => world.get<CVC>("cstorvolumeconfigs", volume),
      (c) => c === undefined,
    );
  });
});
