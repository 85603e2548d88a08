// The CSI driver under the real sidecars, end to end (docs/adr/0047-the-csi-driver-one-writer-per-volume.md,
// docs/adr/0052-the-csi-controller-answers-a-snapshot-once-every-replica-has-it.md,
// docs/adr/0057-the-sidecars-test-runs-the-data-path-played-kubelets.md): external-provisioner v6,
// external-attacher v4, external-resizer v2 and csi-snapshotter v8, built from their Go modules by
// scripts/csi-env.sh, run as the shipped cstor-csi-controller ServiceAccount against a real kube-apiserver with
// kube-controller-manager's PV controllers and the snapshot-controller v8 (with upstream's snapshot CRDs), beside
// the driver's controller, the hook server under the Metacontroller emulator and three real node daemons on
// zfs-fuse nodes, and the data path in real kernels (testkit/csi-world.ts, testkit/csi-data-path.ts): a pool site
// per pool exporting its replicas, the volume target agent started in a user-mode-linux target guest for every
// target Deployment, and the driver's node plugin in an application guest, called as the kubelet calls it.
//
// A PVC of the sample class becomes a Bound PV whose CSI source carries the volume's context and its CHAP Secret
// as node-stage secret; a Block claim too. A pod's claim is staged and published on the application's node
// (open-iscsi's login to the target, ext4 made, mounted) and a file written; a second node's VolumeAttachment is
// refused while that node holds the volume. A larger claim grows the CStorVolumeConfig, its replicas, the
// CStorVolume, the array and the LUN; NodeExpandVolume grows the filesystem with the file intact. A Block claim
// is served raw. A VolumeSnapshot of the sample snapshot class is taken by the target and the pools' node
// daemons. The pod's volumes go and the second node's attachment succeeds; a deleted claim's volume waits for its
// snapshots, then goes with its target. The kubelet's and the attach/detach controller's parts and node-driver-
// registrar's CSINode objects are played. UML_TIMINGS=1 prints the data path's set-up steps.
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import { CSI, LABEL } from "../../api/constants.js";
import type { CV, CVC, CVR, CVSnap } from "../../api/types.js";
import { nodeInitiatorIqn, volumeIqn } from "../../lib/volume/iqn.js";
import type { CsiDataPath } from "../../testkit/csi-data-path.js";
import type { PodVolume } from "../../testkit/csi-node-kubelet.js";
import { CsiWorld } from "../../testkit/csi-world.js";
import { installProject, ownCluster, repoPath, waitUntil, type OwnCluster } from "../../testkit/kube.js";
import { LoggedProcess } from "../../testkit/logged-process.js";
import { stepTimer } from "../../testkit/uml/guest-node.js";

const NS = "shop";
const DEVICE_MIB = 2048;
const WAIT_MS = 180_000;
const MiB = 1024 * 1024;
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const SAMPLE_CLASS = parse(
  readFileSync(repoPath("metacontroller/samples/volumes/storageclass-cstor-csi.yaml"), "utf8"),
) as Record<string, any>;
const SNAPSHOT_CLASS_FILE = repoPath(
  "metacontroller/samples/volumes/snapshots/volumesnapshotclass-cstor-csi.yaml",
);
const SNAPSHOT_CLASS = parse(readFileSync(SNAPSHOT_CLASS_FILE, "utf8")) as Record<string, any>;
const SNAPSHOTS = "/apis/snapshot.storage.k8s.io/v1";
const PAIR_CLASS = "cstor-csi-pair";

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

describe("integration: the CSI driver under the sidecars, the real target and a node in user-mode Linux", function () {
  this.timeout(25 * 60_000);
  let cluster: OwnCluster;
  let world: CsiWorld;
  let data: CsiDataPath;
  let dir: string;
  const sidecars: LoggedProcess[] = [];
  const { timings, timed } = stepTimer();
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
      () => `${what} did not happen; last seen: ${JSON.stringify(last)}`,
    );
    return last!;
  };
  const claim = async (
    name: string,
    size: string,
    volumeMode = "Filesystem",
    more: { storageClassName?: string; dataSource?: Record<string, string> } = {},
  ) => {
    await world.apply({
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name, namespace: NS },
      spec: {
        accessModes: ["ReadWriteOnce"],
        storageClassName: SAMPLE_CLASS.metadata.name,
        volumeMode,
        resources: { requests: { storage: size } },
        ...more,
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
    cluster = await timed("the apiserver, its PV controllers, the project installed", async () => {
      const own = await ownCluster({
        controllers: ["persistentvolume-binder", "pvc-protection", "pv-protection"],
      });
      await installProject(own);
      return own;
    });
    dir = mkdtempSync(join(tmpdir(), "cstor-csi-sidecars-"));
    // Three replicas, as the sample class has: a volume grows online only when one replica can leave at a time.
    world = await timed("the world (pools, guests, node plugin, pool sites)", () =>
      CsiWorld.start({ cluster, deviceMiB: DEVICE_MIB, pools: 3, dataPath: true }),
    );
    data = world.dataPath!;
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
    // What node-driver-registrar and the kubelet write on each pool node: the driver's node id there.
    await world.apply(
      ...world.nodeNames.map((node) => ({
        apiVersion: "storage.k8s.io/v1",
        kind: "CSINode",
        metadata: { name: node },
        spec: { drivers: [{ name: CSI.driverName, nodeID: node }] },
      })),
      { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
      { ...SAMPLE_CLASS, parameters: { ...SAMPLE_CLASS.parameters, ...world.parameters() } },
      // Two replicas on three pools: a restore of its snapshot with three replicas copies to the third pool.
      {
        ...SAMPLE_CLASS,
        metadata: { name: PAIR_CLASS },
        parameters: { ...SAMPLE_CLASS.parameters, ...world.parameters(), replicaCount: "2" },
      },
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

  afterEach(function () {
    if (this.currentTest?.state === "failed") console.log(tails());
  });

  after(async function () {
    this.timeout(5 * 60_000);
    for (const sidecar of sidecars) await sidecar.stop();
    await timed("the world stopped", async () => world?.stop());
    await cluster?.stop();
    if (process.env.UML_TIMINGS)
      console.log([...timings, ...(data?.timings ?? [])].map((t) => `    ${t}`).join("\n"));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  let volume: string;
  let rawVolume: string;
  /** The claims' volumes on the application node's pod, while it runs. */
  let dataPod: PodVolume;
  let rawPod: PodVolume;
  const fileData = randomBytes(4 * MiB);
  const rawData = randomBytes(4 * MiB);
  /** The filesystem's size on the node before the claim grew, in bytes. */
  let filesystemBefore: number;

  /** A command's output on the application's node. */
  const onApp = (script: string) => data.app.run(script, { timeoutMs: 120_000 });
  /** The disk of the volume's LUN on the application's node (its iSCSI session to the volume's target). */
  const appDisk = async (name: string) => (await onApp(`iscsi_disk ${volumeIqn(name)} 0 5`)).trim();
  const bytesOf = async (disk: string) => Number(await onApp(`blockdev --getsize64 ${disk}`));
  /** A mounted filesystem's size (statfs: blocks times the block size). */
  const filesystemBytes = async (path: string) => {
    const [blocks, size] = (await onApp(`stat -f -c '%b %S' ${path}`)).trim().split(" ").map(Number);
    return blocks * size;
  };
  /** sha256 of a file on the node, read from the disk: the page cache dropped first. */
  const checksumOnNode = async (path: string, mib?: number) =>
    (
      await onApp(
        `echo 3 >/proc/sys/vm/drop_caches; dd if=${path} bs=1M ${mib ? `count=${mib} iflag=direct` : ""} status=none | sha256sum`,
      )
    ).split(" ")[0];
  const targetStatus = async (name: string) => (await world.get<CV>("cstorvolumes", name))?.status?.target;
  /** Writes `bytes` at the start of a Block claim's device on the application's node, direct and synced. */
  const writeRaw = async (pod: PodVolume, file: string, bytes: Buffer) => {
    writeFileSync(join(dir, file), bytes);
    await onApp(`dd if=${join(dir, file)} of=${pod.targetPath} bs=1M oflag=direct conv=fsync status=none`);
  };
  /** A VolumeSnapshot of the claim, of the sample snapshot class, once ready. */
  const snapshotOf = async (claimName: string, name: string) => {
    await world.apply({
      apiVersion: "snapshot.storage.k8s.io/v1",
      kind: "VolumeSnapshot",
      metadata: { name, namespace: NS },
      spec: {
        volumeSnapshotClassName: SNAPSHOT_CLASS.metadata.name,
        source: { persistentVolumeClaimName: claimName },
      },
    });
    return eventually(
      `VolumeSnapshot ${name} ready`,
      () => request("GET", `${SNAPSHOTS}/namespaces/${NS}/volumesnapshots/${name}`),
      (v) => v?.status?.readyToUse === true,
    );
  };
  /** The volume's target serves every replica in sync: a copy made by md is done. */
  const inSync = (name: string) =>
    eventually(
      `every replica of ${name} in sync`,
      () => targetStatus(name),
      (t) =>
        t?.state === "Serving" &&
        (t.replicas ?? []).length > 0 &&
        t.replicas!.every((r) => r.state === "InSync"),
    );

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
    expect(cvc.spec).to.deep.equal({ capacity: "64Mi", cstorPoolCluster: world.cspc, replicaCount: 3 });
    expect(cvc.metadata.annotations).to.include({ "cstor.openebs.io/claim": `${NS}/data` });
    expect(cv.metadata.annotations?.[CSI.publishedNodeAnnotation], "published nowhere yet").to.equal("");
    // Of the two-replica class: the restore below copies its snapshot to the third pool.
    const block = await claim("raw", "32Mi", "Block", { storageClassName: PAIR_CLASS });
    rawVolume = block.spec.volumeName;
    expect((await pv(rawVolume)).spec.volumeMode).to.equal("Block");
  });

  it("stages and publishes the claim on the application's node: a login to its target, ext4 made and mounted, a file written", async () => {
    dataPod = await data.kubelet.mount(NS, "data");
    const disk = await appDisk(volume);
    const [fsType, source] = (await onApp(`findmnt -n -o FSTYPE,SOURCE ${dataPod.targetPath}`))
      .trim()
      .split(/\s+/);
    expect({ fsType, source }, "the pod's volume: ext4 on the LUN's disk").to.deep.equal({
      fsType: "ext4",
      source: disk,
    });
    const target = await targetStatus(volume);
    expect(target?.state).to.equal("Serving");
    expect(target?.initiators, "the LUN admits the application's node alone").to.deep.equal([
      nodeInitiatorIqn(data.appNode),
    ]);
    writeFileSync(join(dir, "file.bin"), fileData);
    await onApp(
      `dd if=${join(dir, "file.bin")} of=${dataPod.targetPath}/file.bin bs=1M conv=fsync status=none`,
    );
    expect(await checksumOnNode(`${dataPod.targetPath}/file.bin`)).to.equal(sha256(fileData));
    filesystemBefore = await filesystemBytes(dataPod.targetPath);
    expect(filesystemBefore).to.be.within(40 * MiB, 64 * MiB);
  });

  it("refuses a second node's attachment while the application's node holds the volume", async () => {
    const nodeB = world.nodeNames[1];
    await attach("data-b", nodeB, volume);
    const refused = await eventually(
      "node B's attachment refused",
      () => attachment("data-b"),
      (a) => Boolean(a?.status?.attachError),
    );
    expect(refused.status.attached).to.equal(false);
    expect(refused.status.attachError.message).to.include(`published to node ${data.appNode}`);
    expect((await targetStatus(volume))?.initiators).to.deep.equal([nodeInitiatorIqn(data.appNode)]);
    await request("DELETE", "/apis/storage.k8s.io/v1/volumeattachments/data-b");
    await eventually(
      "node B's attachment gone",
      () => attachment("data-b"),
      (a) => a === undefined,
    );
  });

  it("grows the volume when its claim grows: CVC, replicas, CStorVolume, array, LUN, then the node's filesystem", async () => {
    await request(
      "PATCH",
      `/api/v1/namespaces/${NS}/persistentvolumeclaims/data`,
      { spec: { resources: { requests: { storage: "128Mi" } } } },
      "application/merge-patch+json",
    );
    await eventually(
      "the PV at 128Mi",
      () => pv(volume),
      (p) => p?.spec?.capacity?.storage === "128Mi",
    );
    expect((await world.get<CVC>("cstorvolumeconfigs", volume))!.spec.capacity).to.equal("128Mi");
    expect((await world.get<CV>("cstorvolumes", volume))!.spec.capacity).to.equal("128Mi");
    const replicas = await world.list<CVR>("cstorvolumereplicas", `${LABEL.replicaVolume}=${volume}`);
    expect(replicas.map((r) => r.status?.capacity?.total)).to.deep.equal(["128Mi", "128Mi", "128Mi"]);
    const waiting = await eventually(
      "the claim waiting for the node's filesystem",
      () => pvc("data"),
      (c) =>
        (c?.status?.conditions ?? []).some((x: { type: string }) => x.type === "FileSystemResizePending"),
    );
    expect(waiting.status.capacity.storage, "the claim shows the new size once the node grew it").to.equal(
      "64Mi",
    );
    const { arraySizeBytes: grown } = (await eventually(
      "the target's array grown",
      () => targetStatus(volume),
      (t) => (t?.arraySizeBytes ?? 0) > 120 * MiB,
    ))!;
    expect(grown, "the array: the capacity less md's room").to.be.within(120 * MiB, 128 * MiB);
    // A kubelet asks at once and is answered UNAVAILABLE until the LUN grew; asked now, the node's 30 s polls
    // of the disk do not take the guests' shared CPU while the target re-reads its replicas.
    const answered = await data.kubelet.expand(dataPod);
    expect(answered).to.equal(grown);
    expect(await bytesOf(await appDisk(volume)), "the LUN the node sees").to.equal(grown);
    const filesystem = await filesystemBytes(dataPod.targetPath);
    expect(filesystem, "the filesystem grew on the node").to.be.within(
      filesystemBefore + 56 * MiB,
      128 * MiB,
    );
    expect(await checksumOnNode(`${dataPod.targetPath}/file.bin`), "the file is intact").to.equal(
      sha256(fileData),
    );
    await eventually(
      "every replica back in sync at the new size",
      () => targetStatus(volume),
      (t) => t?.replicas?.length === 3 && t.replicas.every((r) => r.state === "InSync"),
    );
    const claimed = await pvc("data");
    expect(claimed.status.capacity.storage).to.equal("128Mi");
    expect(claimed.status.conditions ?? []).to.deep.equal([]);
  });

  it("serves a Block claim raw on the application's node: a device file, bytes written and read back", async () => {
    rawPod = await data.kubelet.mount(NS, "raw");
    expect(await onApp(`[[ -b ${rawPod.targetPath} ]] && echo block`)).to.equal("block\n");
    const served = (await targetStatus(rawVolume))!.arraySizeBytes;
    expect(await bytesOf(rawPod.targetPath), "the whole LUN").to.equal(served);
    await writeRaw(rawPod, "raw.bin", rawData);
    expect(await checksumOnNode(rawPod.targetPath, rawData.length / MiB)).to.equal(sha256(rawData));
    expect(
      await onApp(`findmnt -n ${await appDisk(rawVolume)} || echo none`),
      "no filesystem made or mounted on a raw volume's disk",
    ).to.include("none");
  });

  it("snapshots a claim through its target: the VolumeSnapshot ready, its handle the volume's CStorVolumeSnapshot", async () => {
    const snapshot = await snapshotOf("data", "data-snap");
    const content = await request(
      "GET",
      `${SNAPSHOTS}/volumesnapshotcontents/${snapshot.status.boundVolumeSnapshotContentName}`,
    );
    const handle = content.status.snapshotHandle;
    expect(handle).to.equal(`snapshot-${snapshot.metadata.uid}`);
    const cvsnap = (await world.get<CVSnap>("cstorvolumesnapshots", handle))!;
    expect(cvsnap.spec.volume).to.equal(volume);
    expect(cvsnap.metadata.annotations).to.include({ [CSI.volumeSnapshotAnnotation]: `${NS}/data-snap` });
    expect(snapshot.status.restoreSize, "the volume's size when it was taken").to.equal("128Mi");
    expect(cvsnap.status!.replicas, "taken by every replica's pool").to.have.length(3);
    expect(Date.parse(snapshot.status.creationTime)).to.equal(
      Math.floor(Date.parse(cvsnap.status!.creationTime!) / 1000) * 1000,
    );
  });

  it("restores the Block claim's snapshot (data A) and clones the claim (data B): on the node, on every replica", async () => {
    const [dataA, dataB] = [rawData, randomBytes(4 * MiB)];
    await timed("restore: the snapshot of data A", () => snapshotOf("raw", "raw-snap"));
    const snapshotSource = { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "raw-snap" };
    const restored = (
      await timed("restore: the restore Bound", () =>
        claim("raw-restored", "32Mi", "Block", { dataSource: snapshotSource }),
      )
    ).spec.volumeName;
    await writeRaw(rawPod, "b.bin", dataB);
    const cloneSource = { kind: "PersistentVolumeClaim", name: "raw" };
    const cloned = (
      await timed("restore: the clone Bound", () =>
        claim("raw-clone", "32Mi", "Block", { storageClassName: PAIR_CLASS, dataSource: cloneSource }),
      )
    ).spec.volumeName;
    const sourcePools = (await world.get<CVC>("cstorvolumeconfigs", rawVolume))!.status!.pools!;
    const restore = (await world.get<CVC>("cstorvolumeconfigs", restored))!.status!.restore!;
    expect(restore.clonedPools, "clones where the snapshot is").to.deep.equal(sourcePools);
    expect(restore.copiedPools, "the third pool copied by md").to.have.length(1);
    expect((await world.get<CVC>("cstorvolumeconfigs", cloned))!.status!.restore!.clonedPools).to.deep.equal(
      sourcePools,
    );
    const pods = await timed("restore: both staged", () =>
      Promise.all([data.kubelet.mount(NS, "raw-restored"), data.kubelet.mount(NS, "raw-clone")]),
    );
    const expected = new Map([
      [restored, dataA],
      [cloned, dataB],
      [rawVolume, dataB],
    ]);
    await timed("restore: every replica in sync", () => Promise.all([...expected.keys()].map(inSync)));
    for (const [name, bytes] of expected) {
      const pod = [rawPod, ...pods].find((p) => p.volumeId === name)!;
      expect(await checksumOnNode(pod.targetPath, 4), `${name} on the application's node`).to.equal(
        sha256(bytes),
      );
      for (const replica of await world.list<CVR>("cstorvolumereplicas", `${LABEL.replicaVolume}=${name}`))
        expect(sha256(world.replicaData(replica, bytes.length)), `replica ${replica.metadata.name}`).to.equal(
          sha256(bytes),
        );
    }
    await timed("restore: the restore, the clone and the snapshot deleted", async () => {
      await Promise.all(pods.map((pod) => data.kubelet.unmount(pod)));
      await request("DELETE", `${SNAPSHOTS}/namespaces/${NS}/volumesnapshots/raw-snap`);
      for (const name of ["raw-clone", "raw-restored"])
        await request("DELETE", `/api/v1/namespaces/${NS}/persistentvolumeclaims/${name}`);
      for (const name of [cloned, restored])
        await eventually(
          `volume ${name} gone`,
          () => world.get<CVC>("cstorvolumeconfigs", name),
          (c) => c === undefined,
        );
    });
  });

  it("lets the pod go: unpublished, unstaged and logged out, detached; then a second node's attachment succeeds", async () => {
    const [, nodeB] = world.nodeNames;
    for (const pod of [dataPod, rawPod]) await data.kubelet.unmount(pod);
    for (const pod of [dataPod, rawPod])
      expect(await onApp(`findmnt -n ${pod.targetPath} || echo none`), pod.targetPath).to.equal("none\n");
    expect(
      await onApp(`iscsi_session ${volumeIqn(volume)} || iscsi_session ${volumeIqn(rawVolume)} || echo none`),
      "no session to either target",
    ).to.equal("none\n");
    const holder = async () =>
      (await world.get<CV>("cstorvolumes", volume))?.metadata.annotations?.[CSI.publishedNodeAnnotation];
    expect(await holder(), "published nowhere once detached").to.equal("");
    await attach("data-b", nodeB, volume);
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

  it("deletes a claim's volume after its snapshots: refused naming the VolumeSnapshot, then gone with its target", async () => {
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
    await eventually(
      "its target stopped",
      async () => data.targets.volumes(),
      (running) => !running.includes(volume),
    );
  });
});
