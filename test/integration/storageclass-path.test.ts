// The StorageClass path on a real kube-apiserver with kube-controller-manager's PV controllers (binder,
// expander, PVC and PV protection) and the project's hooks under the Metacontroller emulator: a user's PVC of
// the sample class becomes a CStorVolumeConfig, then a PV that kube-controller-manager binds; a resize grows
// the CVC; deleting the PVC deletes (Delete) or keeps (Retain) the volume; a bad class changes nothing and
// says why on the PVC. The cvc-sync hook's part (a Bound CVC and its CStorVolume's target address) is played
// by the test, as the kubelet's is elsewhere: no kubelet, no iSCSI initiator here (docs/adr/0022-from-a-pvc-to-a-volume-a-decoratorcontroller.md).
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { parse } from "yaml";
import { API_VERSION, KIND, PROVISIONING } from "../../api/constants.js";
import { installProject, ownCluster, repoPath, waitUntil, type KubeCluster } from "../../testkit/kube.js";
import { MetacontrollerDriver, serveHooks, type Obj } from "../../testkit/metacontroller-driver.js";

const NS = "shop";
const POOLS_NS = "openebs";
const DECORATOR = "cstor-storage-class";
const SAMPLE_CLASS = parse(
  readFileSync(repoPath("metacontroller/samples/volumes/storageclass-cstor.yaml"), "utf8"),
) as Obj;

describe("integration: from a StorageClass to a Bound volume (real PV controller)", function () {
  this.timeout(20 * 60_000);
  let cluster: KubeCluster;
  let driver: MetacontrollerDriver;

  const get = async (path: string): Promise<Obj | undefined> => {
    const response = await cluster.request(cluster.admin, "GET", path);
    return response.status === 200 ? (response.body as Obj) : undefined;
  };
  const pvcPath = (name: string) => `/api/v1/namespaces/${NS}/persistentvolumeclaims/${name}`;
  const cvcPath = (name: string) => `/apis/${API_VERSION}/namespaces/${POOLS_NS}/cstorvolumeconfigs/${name}`;
  const pvPath = (name: string) => `/api/v1/persistentvolumes/${name}`;
  const syncClass = (name: string) =>
    driver.syncDecorator(DECORATOR, "storage.k8s.io/v1", "storageclasses", "", name);

  async function apply(object: Obj): Promise<void> {
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(object) });
  }

  function storageClass(name: string, changes: Obj = {}): Obj {
    return { ...SAMPLE_CLASS, ...changes, metadata: { ...SAMPLE_CLASS.metadata, name } };
  }

  /** A PVC, once kube-controller-manager has handed it to our provisioner (it found no PV to bind). */
  async function claim(name: string, className: string, size = "1Gi"): Promise<Obj> {
    await apply({
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name, namespace: NS },
      spec: {
        accessModes: ["ReadWriteOnce"],
        storageClassName: className,
        resources: { requests: { storage: size } },
      },
    });
    let pvc: Obj | undefined;
    await waitUntil(
      async () => {
        pvc = await get(pvcPath(name));
        return (
          pvc?.metadata.annotations?.["volume.kubernetes.io/storage-provisioner"] === PROVISIONING.provisioner
        );
      },
      60_000,
      () =>
        `kube-controller-manager never handed PVC ${name} to ${PROVISIONING.provisioner}: ${JSON.stringify(pvc?.metadata)}`,
    );
    return pvc!;
  }

  /** What the cvc-sync hook and the target do: the volume is placed (Bound) and its target has an address. */
  async function playVolumeServed(volume: string, capacity: string): Promise<void> {
    await apply({
      apiVersion: API_VERSION,
      kind: KIND.cv,
      metadata: { name: volume, namespace: POOLS_NS },
      spec: {
        capacity,
        targetIP: "10.96.0.41",
        targetPort: "3260",
        targetPortal: "10.96.0.41:3260",
        iqn: `iqn.2016-09.com.openebs.cstor:${volume}`,
        replicationFactor: 3,
        consistencyFactor: 2,
        desiredReplicationFactor: 3,
      },
    });
    const status = await cluster.request(
      cluster.admin,
      "PATCH",
      `${cvcPath(volume)}/status`,
      { status: { phase: "Bound", capacity } },
      "application/merge-patch+json",
    );
    expect(status.status, JSON.stringify(status.body)).to.equal(200);
  }

  /** A PVC of `className` made Bound to its PV by kube-controller-manager; the volume's name. */
  async function boundVolume(name: string, className: string): Promise<string> {
    const pvc = await claim(name, className);
    const volume = `pvc-${pvc.metadata.uid}`;
    await syncClass(className);
    await playVolumeServed(volume, "1Gi");
    await syncClass(className);
    await waitUntil(
      async () => (await get(pvcPath(name)))?.status?.phase === "Bound",
      60_000,
      () => `PVC ${name} never became Bound`,
    );
    return volume;
  }

  async function deleteClaim(name: string, volume: string): Promise<void> {
    await cluster.kubectl(["delete", "pvc", "-n", NS, name, "--wait=false"]);
    // pvc-protection lets it go (no pod uses it), then the PV controller marks the PV Released.
    await waitUntil(
      async () => (await get(pvPath(volume)))?.status?.phase === "Released",
      60_000,
      () => `PV ${volume} never became Released`,
    );
  }

  before(async () => {
    cluster = await ownCluster({
      controllers: [
        "persistentvolume-binder",
        "persistentvolume-expander",
        "pvc-protection",
        "pv-protection",
      ],
    });
    // A bad class stored before the install (its admission policy would refuse it now): the hooks judge it too.
    await apply(
      storageClass("cstor-typo", { parameters: { ...SAMPLE_CLASS.parameters, replicaCount: "9" } }),
    );
    await installProject(cluster);
    driver = new MetacontrollerDriver({ cluster, hookServer: await serveHooks() });
    await cluster.kubectl(["create", "namespace", NS]);
    await cluster.kubectl([
      "apply",
      "--server-side",
      "-f",
      repoPath("metacontroller/samples/cspc-mirror.yaml"),
    ]);
    await apply(SAMPLE_CLASS);
    await apply(storageClass("cstor-retain", { reclaimPolicy: "Retain" }));
  });

  it("a PVC of the sample class gets its CVC; once the volume is served, a PV that kube-controller-manager binds", async () => {
    const pvc = await claim("data", "cstor-mirror-3");
    const volume = `pvc-${pvc.metadata.uid}`;
    const first = await syncClass("cstor-mirror-3");
    expect(first.writes).to.include(`create ${KIND.cvc} ${POOLS_NS}/${volume}`);
    const cvc = (await get(cvcPath(volume)))!;
    expect(cvc.spec).to.deep.equal({
      capacity: "1Gi",
      cstorPoolCluster: "cstor-pool-mirror",
      replicaCount: 3,
    });
    expect(cvc.metadata.ownerReferences[0]).to.include({
      kind: "StorageClass",
      name: "cstor-mirror-3",
      controller: true,
    });
    expect(await get(pvPath(volume)), "no PV before the volume is served").to.equal(undefined);
    // The new CVC brings another sync (as Metacontroller's attachment informer would): the PVC hears it waits.
    expect((await syncClass("cstor-mirror-3")).writes).to.include(`create Event ${NS}/${volume}`);
    const waiting = await cluster.kubectl([
      "get",
      "events",
      "-n",
      NS,
      "--field-selector",
      "involvedObject.name=data",
      "-o",
      "json",
    ]);
    expect((JSON.parse(waiting.stdout) as Obj).items.map((e: Obj) => e.reason)).to.include(
      PROVISIONING.waitingReason,
    );

    await playVolumeServed(volume, "1Gi");
    const second = await syncClass("cstor-mirror-3");
    expect(second.writes).to.include(`create PersistentVolume ${volume}`);
    await waitUntil(
      async () => (await get(pvcPath("data")))?.status?.phase === "Bound",
      60_000,
      () => "PVC data never became Bound",
    );
    const bound = (await get(pvcPath("data")))!;
    const pv = (await get(pvPath(volume)))!;
    expect(bound.spec.volumeName).to.equal(volume);
    expect(pv.status.phase).to.equal("Bound");
    expect(pv.spec.iscsi).to.deep.include({
      targetPortal: "10.96.0.41:3260",
      iqn: `iqn.2016-09.com.openebs.cstor:${volume}`,
      lun: 0,
      fsType: "ext4",
      // The node logs in as the volume's client initiator, with the CHAP of the Secret beside the CVC.
      initiatorName: `iqn.2016-09.com.openebs.cstor:client:${volume}`,
      chapAuthSession: true,
    });
    expect(pv.spec.iscsi.secretRef).to.deep.equal({ name: `${volume}-chap`, namespace: POOLS_NS });
    expect(pv.spec.claimRef).to.include({ name: "data", namespace: NS, uid: pvc.metadata.uid });
    expect(pv.metadata.annotations[PROVISIONING.provisionedByAnnotation]).to.equal(PROVISIONING.provisioner);
    // The waiting Event is gone, and the answer is a fixed point: nothing more to write.
    await syncClass("cstor-mirror-3");
    expect((await syncClass("cstor-mirror-3")).writes).to.deep.equal([]);
    const events = await cluster.kubectl([
      "get",
      "events",
      "-n",
      NS,
      "--field-selector",
      `involvedObject.name=data,source=${PROVISIONING.eventSource}`,
      "-o",
      "name",
    ]);
    expect(events.stdout.trim()).to.equal("");
  });

  it("a resize of the PVC grows the CVC; the PV follows once the volume reports the capacity reached", async () => {
    const volume = `pvc-${(await get(pvcPath("data")))!.metadata.uid}`;
    await cluster.kubectl([
      "patch",
      "pvc",
      "-n",
      NS,
      "data",
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { resources: { requests: { storage: "2Gi" } } } }),
    ]);
    await syncClass("cstor-mirror-3");
    expect((await get(cvcPath(volume)))!.spec.capacity).to.equal("2Gi");
    expect((await get(pvPath(volume)))!.spec.capacity.storage).to.equal("1Gi");
    await cluster.request(
      cluster.admin,
      "PATCH",
      `${cvcPath(volume)}/status`,
      { status: { capacity: "2Gi" } },
      "application/merge-patch+json",
    );
    await syncClass("cstor-mirror-3");
    expect((await get(pvPath(volume)))!.spec.capacity.storage).to.equal("2Gi");
  });

  it("deleting the PVC of a Delete class deletes its PV and CVC once the PV controller released the PV", async () => {
    const volume = `pvc-${(await get(pvcPath("data")))!.metadata.uid}`;
    await deleteClaim("data", volume);
    const sync = await syncClass("cstor-mirror-3");
    expect(sync.writes).to.include.members([
      `delete PersistentVolume ${volume}`,
      `delete ${KIND.cvc} ${POOLS_NS}/${volume}`,
    ]);
    await waitUntil(
      async () => !(await get(pvPath(volume))) && !(await get(cvcPath(volume))),
      60_000,
      () => `PV or CVC ${volume} still there`,
    );
  });

  it("deleting the PVC of a Retain class keeps its PV and CVC, and the CVC remembers Retain", async () => {
    const volume = await boundVolume("keep", "cstor-retain");
    await deleteClaim("keep", volume);
    expect((await syncClass("cstor-retain")).writes.filter((w) => w.startsWith("delete"))).to.deep.equal([]);
    expect((await get(pvPath(volume)))?.status.phase).to.equal("Released");
    expect((await get(cvcPath(volume)))?.metadata.annotations[PROVISIONING.reclaimPolicyAnnotation]).to.equal(
      "Retain",
    );
  });

  it("a PVC of a class with a bad parameter gets no CVC, and a Warning Event on the PVC and the class's annotation say why", async () => {
    await claim("typo", "cstor-typo");
    const sync = await syncClass("cstor-typo");
    expect(sync.writes.filter((w) => w.includes(KIND.cvc))).to.deep.equal([]);
    const described = await cluster.kubectl(["describe", "pvc", "-n", NS, "typo"]);
    expect(described.stdout).to.match(/Warning\s+ProvisioningFailed/);
    expect(described.stdout).to.include('parameters.replicaCount is "9"');
    const sc = JSON.parse(
      (await cluster.kubectl(["get", "storageclass", "cstor-typo", "-o", "json"])).stdout,
    ) as Obj;
    expect(sc.metadata.annotations[PROVISIONING.classAnnotation]).to.include(
      'write a whole number from "1" to "5"',
    );
  });
});
