// The CSI driver under the real sidecars (docs/adr/0047-the-csi-driver-one-writer-per-volume.md,
// docs/adr/0052-the-csi-controller-answers-a-snapshot-once-every-replica-has-it.md): external-provisioner v6,
// external-attacher v4, external-resizer v2 and csi-snapshotter v8, built from their Go modules by
// scripts/csi-env.sh, run as the shipped cstor-csi-controller ServiceAccount against a real kube-apiserver with
// kube-controller-manager's PV controllers and the snapshot-controller v8 (with upstream's snapshot CRDs), beside
// the driver's controller, the hook server under the Metacontroller emulator and two real node daemons on zfs-fuse
// nodes (testkit/csi-world.ts). A PVC of the sample class becomes a Bound PV whose CSI source carries the volume's
// context and its CHAP Secret as node-stage secret; a Block claim too; a VolumeAttachment publishes the volume to
// its node, and a second node's is refused until the first detaches; a larger claim grows the CStorVolumeConfig
// and its replicas, then waits for the node's filesystem; a VolumeSnapshot of the sample snapshot class becomes
// ready with the volume's CStorVolumeSnapshot as its handle; a deleted claim's volume waits for its snapshots,
// then goes. The kubelet's part (CSINode objects, VolumeAttachments made by the attach/detach controller for a
// pod's node) and the volume target's snapshot pass (testkit/snapshot-player.ts: no target runs here) are played;
// the node side runs in user-mode Linux.
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import { CSI, LABEL } from "../../api/constants.js";
import type { CV, CVC, CVR, CVSnap } from "../../api/types.js";
import { CsiWorld } from "../../testkit/csi-world.js";
import { installProject, ownCluster, repoPath, waitUntil, type OwnCluster } from "../../testkit/kube.js";
import { LoggedProcess } from "../../testkit/logged-process.js";

const NS = "shop";
const DEVICE_MIB = 2048;
const WAIT_MS = 180_000;
const SAMPLE_CLASS = parse(
  readFileSync(repoPath("metacontroller/samples/volumes/storageclass-cstor-csi.yaml"), "utf8"),
) as Record<string, any>;
const SNAPSHOT_CLASS_FILE = repoPath(
  "metacontroller/samples/volumes/snapshots/volumesnapshotclass-cstor-csi.yaml",
);
const SNAPSHOT_CLASS = parse(readFileSync(SNAPSHOT_CLASS_FILE, "utf8")) as Record<string, any>;
const SNAPSHOTS = "/apis/snapshot.storage.k8s.io/v1";

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

describe("integration: the CSI driver under external-provisioner, -attacher, -resizer and -snapshotter", function () {
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
    start("csi-snapshotter", binaries.CSI_SNAPSHOTTER, ["--extra-create-metadata", "--timeout=60s"]);
    await startSnapshotController(binaries);
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

  /** The cluster's add-on, as docs/install.md installs it: upstream's CRDs, the controller as the admin. */
  const startSnapshotController = async (binaries: Record<string, string>) => {
    const crds = readdirSync(binaries.SNAPSHOT_CRDS).filter(
      (f) => f.endsWith(".yaml") && f !== "kustomization.yaml",
    );
    await cluster.kubectl([
      "apply",
      "--server-side",
      ...crds.flatMap((f) => ["-f", join(binaries.SNAPSHOT_CRDS, f)]),
    ]);
    // snapshot.storage.k8s.io_volumesnapshots.yaml holds the CRD volumesnapshots.snapshot.storage.k8s.io.
    const names = crds.map((f) => `crd/${f.replace(/^([^_]+)_(.*)\.yaml$/, "$2.$1")}`);
    await cluster.kubectl(["wait", "--for=condition=Established", "--timeout=60s", ...names]);
    sidecars.push(
      new LoggedProcess(
        "snapshot-controller",
        binaries.CSI_SNAPSHOT_CONTROLLER,
        [`--kubeconfig=${cluster.admin.kubeconfig}`, "--leader-election=false", "--v=3"],
        { env: { PATH: process.env.PATH ?? "" } },
      ),
    );
    await cluster.kubectl(["apply", "--server-side", "-f", SNAPSHOT_CLASS_FILE]);
  };

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

  it("snapshots a claim: the VolumeSnapshot ready, its content's handle the volume's CStorVolumeSnapshot", async () => {
    await world.apply({
      apiVersion: "snapshot.storage.k8s.io/v1",
      kind: "VolumeSnapshot",
      metadata: { name: "data-snap", namespace: NS },
      spec: {
        volumeSnapshotClassName: SNAPSHOT_CLASS.metadata.name,
        source: { persistentVolumeClaimName: "data" },
      },
    });
    const snapshot = await eventually(
      "the VolumeSnapshot ready",
      () => request("GET", `${SNAPSHOTS}/namespaces/${NS}/volumesnapshots/data-snap`),
      (v) => v?.status?.readyToUse === true,
    );
    const content = await request(
      "GET",
      `${SNAPSHOTS}/volumesnapshotcontents/${snapshot.status.boundVolumeSnapshotContentName}`,
    );
    const handle = content.status.snapshotHandle;
    expect(handle).to.equal(`snapshot-${snapshot.metadata.uid}`);
    const cvsnap = (await world.get<CVSnap>("cstorvolumesnapshots", handle))!;
    expect(cvsnap.spec.volume).to.equal(volume);
    expect(cvsnap.metadata.annotations).to.include({ [CSI.volumeSnapshotAnnotation]: `${NS}/data-snap` });
    expect(snapshot.status.restoreSize, "the volume's size when it was taken").to.equal("96Mi");
    expect(Date.parse(snapshot.status.creationTime)).to.equal(
      Math.floor(Date.parse(cvsnap.status!.creationTime!) / 1000) * 1000,
    );
  });

  it("deletes a claim's volume after its snapshots: refused naming the VolumeSnapshot, then gone with it", async () => {
    const handle = (await world.list<CVSnap>("cstorvolumesnapshots", `${LABEL.replicaVolume}=${volume}`))[0]
      .metadata.name!;
    await request("DELETE", `/api/v1/namespaces/${NS}/persistentvolumeclaims/data`);
    const refused = await eventually(
      "the provisioner's DeleteVolume refused",
      () =>
        request("GET", `/api/v1/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${volume}`)}`),
      (events) => (events?.items ?? []).some((e: { reason: string }) => e.reason === "VolumeFailedDelete"),
    );
    const message = refused.items.find((e: { reason: string }) => e.reason === "VolumeFailedDelete").message;
    expect(message).to.include(`has snapshots ${handle} (VolumeSnapshot ${NS}/data-snap)`);
    expect(await world.get<CVC>("cstorvolumeconfigs", volume), "the volume stays").to.not.equal(undefined);
    await request("DELETE", `${SNAPSHOTS}/namespaces/${NS}/volumesnapshots/data-snap`);
    await eventually(
      "the CStorVolumeSnapshot gone",
      () => world.get<CVSnap>("cstorvolumesnapshots", handle),
      (c) => c === undefined,
    );
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
