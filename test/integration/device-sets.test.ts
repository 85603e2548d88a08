// Pools on device sets (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md) on a real kube-apiserver with kube-controller-manager's PV
// binder, PVC/PV protection and garbage collector, and the project's hooks under the Metacontroller emulator:
// a CSPC with a raidz device set of 3 PVCs gets its PVCs, the PV controller binds them to local PVs of node-a,
// and the CSPI is made on node-a at the PVs' paths; count 3 -> 6 adds a second raidz group; deleting the CSPC
// leaves the PVCs Bound (the garbage collector keeps them for their second owner, the Namespace). The node
// daemon's part (the pool ONLINE) is played by the test here; no kubelet runs, so no pod binds a claim.
import { expect } from "chai";
import { API_VERSION, KIND, LABEL } from "../../api/constants.js";
import { getIfPresent, installProject, ownCluster, waitUntil, type OwnCluster } from "../../testkit/kube.js";
import { MetacontrollerDriver, serveHooks, type Obj } from "../../testkit/metacontroller-driver.js";

const NS = "ds-pools";
const CSPC = "ds";
const CLASS = "ds-local-block";

describe("integration: a pool on a device set of local PVs (real PV controller and garbage collector)", function () {
  this.timeout(20 * 60_000);
  let cluster: OwnCluster;
  let driver: MetacontrollerDriver;

  const get = (path: string): Promise<Obj | undefined> => getIfPresent(cluster, path);
  const pvcPath = (name: string) => `/api/v1/namespaces/${NS}/persistentvolumeclaims/${name}`;
  const cspcPath = `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters/${CSPC}`;
  const cspis = async (): Promise<Obj[]> =>
    ((await get(`/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances`))?.items ?? []) as Obj[];
  const sync = () => driver.syncComposite("cstor-pool-cluster", NS, CSPC);

  async function apply(object: Obj): Promise<void> {
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(object) });
  }

  /** A static local PV in Block mode on `node`, as a local-volume provisioner would publish a disk. */
  function localPv(name: string, node: string): Obj {
    return {
      apiVersion: "v1",
      kind: "PersistentVolume",
      metadata: { name },
      spec: {
        capacity: { storage: "1Gi" },
        accessModes: ["ReadWriteOnce"],
        volumeMode: "Block",
        storageClassName: CLASS,
        persistentVolumeReclaimPolicy: "Retain",
        local: { path: `/dev/disk/by-id/${name}` },
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: LABEL.hostname, operator: "In", values: [node] }] },
            ],
          },
        },
      },
    };
  }

  function cspc(count: number): Obj {
    const set = {
      name: "data",
      count,
      type: "raidz",
      groupSize: 3,
      volumeClaimTemplate: {
        spec: { storageClassName: CLASS, volumeMode: "Block", resources: { requests: { storage: "1Gi" } } },
      },
    };
    return {
      apiVersion: API_VERSION,
      kind: KIND.cspc,
      metadata: { name: CSPC, namespace: NS },
      spec: { pools: [{ deviceSets: [set] }] },
    };
  }

  async function waitBound(names: string[]): Promise<void> {
    await waitUntil(
      async () =>
        (await Promise.all(names.map(async (n) => (await get(pvcPath(n)))?.status?.phase))).every(
          (p) => p === "Bound",
        ),
      60_000,
      () => `PVCs ${names.join(", ")} never all became Bound`,
    );
  }

  /** The node daemon's report: the pool is built, ONLINE and holds no volume (day-2 changes wait for a created pool). */
  async function playPoolOnline(name: string): Promise<void> {
    const path = `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances/${name}/status`;
    const res = await cluster.request(
      cluster.admin,
      "PATCH",
      path,
      { status: { phase: "ONLINE", provisionedReplicas: 0, lastUpdateTime: new Date().toISOString() } },
      "application/merge-patch+json",
    );
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  }

  before(async () => {
    cluster = await ownCluster({
      controllers: ["persistentvolume-binder", "pvc-protection", "pv-protection", "garbagecollector"],
    });
    await installProject(cluster);
    driver = new MetacontrollerDriver({ cluster, hookServer: await serveHooks() });
    await cluster.kubectl(["create", "namespace", NS]);
    for (const node of ["node-a", "node-b"])
      await apply({
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: node, labels: { [LABEL.hostname]: node } },
      });
    await apply({
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: CLASS },
      provisioner: "kubernetes.io/no-provisioner",
      volumeBindingMode: "Immediate",
    });
    for (let i = 1; i <= 6; i++) await apply(localPv(`ds-pv-a${i}`, "node-a"));
  });

  after(async () => {
    await cluster?.stop();
  });

  it("a raidz device set of 3: PVCs made, bound by the PV controller, then one CSPI on the PVs' node at their paths", async () => {
    await apply(cspc(3));
    const first = await sync();
    expect(first.writes).to.include.members([
      "create PersistentVolumeClaim ds-pools/ds-data-0",
      "create PersistentVolumeClaim ds-pools/ds-data-1",
      "create PersistentVolumeClaim ds-pools/ds-data-2",
    ]);
    expect(await cspis()).to.deep.equal([]);
    const pvc = (await get(pvcPath("ds-data-0")))!;
    expect(pvc.spec.volumeMode).to.equal("Block");
    expect(pvc.metadata.ownerReferences.map((r: Obj) => r.kind).sort()).to.deep.equal([
      "CStorPoolCluster",
      "Namespace",
    ]);
    await waitBound(["ds-data-0", "ds-data-1", "ds-data-2"]);

    await sync();
    const [cspi, ...others] = await cspis();
    expect(others).to.deep.equal([]);
    expect(cspi.spec.hostName).to.equal("node-a");
    expect(cspi.metadata.labels[LABEL.onDeviceSets]).to.equal("true");
    const volumes = await Promise.all(
      ["ds-data-0", "ds-data-1", "ds-data-2"].map(
        async (n) => (await get(pvcPath(n)))!.spec.volumeName as string,
      ),
    );
    expect(cspi.spec.raidGroups).to.deep.equal([
      {
        type: "raidz",
        blockDevices: ["ds-data-0", "ds-data-1", "ds-data-2"].map((n, i) => ({
          blockDeviceName: n,
          capacity: 1024 ** 3,
          devLink: `/dev/disk/by-id/${volumes[i]}`,
        })),
      },
    ]);
    expect(
      (await get(`/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims`))?.items,
      "no BlockDeviceClaim for a PVC",
    ).to.deep.equal([]);
    // The status says the pool exists; then the answer is a fixed point.
    expect((await sync()).writes).to.deep.equal([`status ${KIND.cspc} ${NS}/${CSPC}`]);
    expect((await sync()).writes, "a fixed point").to.deep.equal([]);
  });

  it("count 3 -> 6 adds a second 3-device raidz group once the new PVCs are Bound", async () => {
    const [cspi] = await cspis();
    await playPoolOnline(cspi.metadata.name);
    await apply(cspc(6));
    expect((await sync()).writes).to.include("create PersistentVolumeClaim ds-pools/ds-data-5");
    await waitBound(["ds-data-3", "ds-data-4", "ds-data-5"]);
    await sync();
    const [grown] = await cspis();
    expect(grown.metadata.name).to.equal(cspi.metadata.name);
    expect(
      grown.spec.raidGroups.map((g: Obj) => [g.type, g.blockDevices.map((d: Obj) => d.blockDeviceName)]),
    ).to.deep.equal([
      ["raidz", ["ds-data-0", "ds-data-1", "ds-data-2"]],
      ["raidz", ["ds-data-3", "ds-data-4", "ds-data-5"]],
    ]);
  });

  it("count 6 -> 3 is refused: the pool and its 6 PVCs stay", async () => {
    await apply(cspc(3));
    await sync();
    const [cspi] = await cspis();
    expect(cspi.spec.raidGroups).to.have.length(2);
    const status = (await get(cspcPath))!.status;
    const rejected = status.conditions.find((c: Obj) => c.type === "PoolSpecRejected");
    expect(rejected.status).to.equal("True");
    expect(rejected.message).to.include(
      "holds PVCs ds-data-3, ds-data-4, ds-data-5, which its device sets no longer name",
    );
    expect(await get(pvcPath("ds-data-5"))).to.not.equal(undefined);
    await apply(cspc(6));
  });

  it("a WaitForFirstConsumer class: the PV binder leaves the PVCs Pending (no pod consumes them) and the pool waits in ClaimsPending, saying why", async () => {
    const wffc = "ds-wffc";
    await apply({
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: `${CLASS}-wffc` },
      provisioner: "kubernetes.io/no-provisioner",
      volumeBindingMode: "WaitForFirstConsumer",
    });
    for (let i = 1; i <= 3; i++) {
      const pv = localPv(`ds-pv-w${i}`, "node-b");
      pv.spec.storageClassName = `${CLASS}-wffc`;
      await apply(pv);
    }
    const set = {
      name: "data",
      count: 3,
      type: "raidz",
      groupSize: 3,
      volumeClaimTemplate: {
        spec: {
          storageClassName: `${CLASS}-wffc`,
          volumeMode: "Block",
          resources: { requests: { storage: "1Gi" } },
        },
      },
    };
    await apply({
      apiVersion: API_VERSION,
      kind: KIND.cspc,
      metadata: { name: wffc, namespace: NS },
      spec: { pools: [{ deviceSets: [set] }] },
    });
    await driver.syncComposite("cstor-pool-cluster", NS, wffc);
    // The binder has seen the PVCs when it says why it does not bind them.
    const selector = encodeURIComponent(
      "involvedObject.kind=PersistentVolumeClaim,involvedObject.name=ds-wffc-data-0",
    );
    await waitUntil(
      async () =>
        ((await get(`/api/v1/namespaces/${NS}/events?fieldSelector=${selector}`))?.items ?? []).some(
          (e: Obj) => e.reason === "WaitForFirstConsumer",
        ),
      60_000,
      () => "the PV binder never said it waits for a first consumer",
    );
    await driver.syncComposite("cstor-pool-cluster", NS, wffc);
    for (let i = 0; i < 3; i++)
      expect((await get(pvcPath(`ds-wffc-data-${i}`)))?.status.phase).to.equal("Pending");
    expect((await cspis()).filter((c) => c.metadata.labels[LABEL.cspc] === wffc)).to.deep.equal([]);
    const pending = (await get(
      `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters/${wffc}`,
    ))!.status.conditions.find((c: Obj) => c.type === "ClaimsPending");
    expect(pending.status).to.equal("True");
    expect(pending.message)
      .to.include("(ds-wffc-data-0, ds-wffc-data-1, ds-wffc-data-2)")
      .and.include("a WaitForFirstConsumer class waits for a pod");
  });

  it("deleting the CSPC removes the pool but keeps its PVCs Bound (the Namespace stays their owner)", async () => {
    await cluster.kubectl(["delete", "cspc", "-n", NS, CSPC, "--wait=false"]);
    await waitUntil(
      async () => {
        await sync();
        return !(await get(cspcPath));
      },
      60_000,
      () => "the CSPC was never finalized",
    );
    expect(await cspis()).to.deep.equal([]);
    // The garbage collector drops the CSPC's reference and, with an owner left, deletes nothing.
    await waitUntil(
      async () =>
        ((await get(pvcPath("ds-data-0")))?.metadata.ownerReferences ?? []).every(
          (r: Obj) => r.kind === "Namespace",
        ),
      60_000,
      () => "the garbage collector never dropped the CSPC's reference",
    );
    for (let i = 0; i < 6; i++) {
      const pvc = await get(pvcPath(`ds-data-${i}`));
      expect(pvc?.status.phase, `ds-data-${i}`).to.equal("Bound");
      expect(pvc?.metadata.deletionTimestamp, `ds-data-${i}`).to.equal(undefined);
      expect(pvc?.metadata.ownerReferences.map((r: Obj) => r.kind)).to.deep.equal(["Namespace"]);
    }
  });
});
