// The whole control loop on a real apiserver: a CSPC applied with kubectl → BlockDeviceClaims → (bound as
// NDM would) → a CStorPoolInstance → its pool Deployment, with the test driver playing Metacontroller by the
// controllers we ship and the hook server answering over HTTP. Then health, self-healing and deletion.
import { expect } from "chai";
import { ANNOTATION, API_VERSION, KIND, LABEL } from "../../api/constants.js";
import { claimName, poolDeploymentName } from "../../lib/names.js";
import {
  getIfPresent,
  markDeploymentAvailable,
  projectInstalled,
  type KubeCluster,
} from "../../testkit/kube.js";
import {
  CONTROLLER_UID,
  DECORATOR_ANNOTATION,
  MetacontrollerDriver,
  serveHooks,
} from "../../testkit/metacontroller-driver.js";

const NS = "mc-loop";
const NODE = "loop-node-1";
const CSPC = "loop-mirror";
const DEVICES = ["loop-bd-1", "loop-bd-2"];
const COMPOSITE = "cstor-pool-cluster";
const DECORATOR = "cstor-pool-instance";
const GIB = 1024 ** 3;

const cspcPath = `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters`;
const setup = [
  { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
  {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: NODE, labels: { [LABEL.hostname]: NODE, "kubernetes.io/os": "linux" } },
  },
  ...DEVICES.map((name, i) => ({
    apiVersion: API_VERSION,
    kind: KIND.blockDevice,
    metadata: {
      name,
      namespace: NS,
      labels: { [LABEL.hostname]: NODE, "ndm.io/blockdevice-type": "blockdevice" },
    },
    spec: {
      path: `/dev/sd${"bc"[i]}`,
      capacity: { storage: 10 * GIB },
      devlinks: [{ kind: "by-id", links: [`/dev/disk/by-id/scsi-0QEMU_${name}`] }],
      filesystem: {},
      nodeAttributes: { nodeName: NODE },
    },
    status: { claimState: "Unclaimed", state: "Active" },
  })),
];
const cspc = {
  apiVersion: API_VERSION,
  kind: KIND.cspc,
  metadata: { name: CSPC, namespace: NS },
  spec: {
    pools: [
      {
        nodeSelector: { [LABEL.hostname]: NODE },
        raidGroups: [
          { type: "mirror", blockDevices: DEVICES.map((blockDeviceName) => ({ blockDeviceName })) },
        ],
        poolConfig: { compression: "lz4" },
      },
    ],
  },
};

describe("integration: the Metacontroller loop (test driver + hook server + real apiserver)", function () {
  this.timeout(20 * 60_000);
  let cluster: KubeCluster;
  let driver: MetacontrollerDriver;

  const get = (path: string): Promise<any> => getIfPresent(cluster, path);
  const list = async (resource: string, group = `apis/${API_VERSION}`): Promise<any[]> =>
    (await get(`/${group}/namespaces/${NS}/${resource}`)).items;
  const theCspc = () => get(`${cspcPath}/${CSPC}`);
  const cspis = () => list("cstorpoolinstances");
  const claims = () => list("blockdeviceclaims");
  const deployments = () => list("deployments", "apis/apps/v1");
  const patchStatus = (path: string, status: unknown) =>
    cluster.request(cluster.admin, "PATCH", `${path}/status`, { status }, "application/merge-patch+json");

  before(async () => {
    cluster = await projectInstalled();
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: setup.map((o) => JSON.stringify(o)).join("\n"),
    });
    driver = new MetacontrollerDriver({ cluster, hookServer: await serveHooks() });
  });

  it("a CSPC applied with kubectl gets Metacontroller's finalizer and one claim per device, owned by it", async () => {
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(cspc) });
    await driver.converge(NS);

    const parent = await theCspc();
    expect(parent.metadata.finalizers).to.include(`metacontroller.io/compositecontroller-${COMPOSITE}`);
    const found = await claims();
    expect(found.map((c) => c.metadata.name).sort()).to.deep.equal(DEVICES.map(claimName).sort());
    for (const claim of found) {
      expect(claim.metadata.ownerReferences).to.deep.equal([
        {
          apiVersion: API_VERSION,
          kind: KIND.cspc,
          name: CSPC,
          uid: parent.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      expect(claim.metadata.labels).to.include({ [CONTROLLER_UID]: parent.metadata.uid, [LABEL.cspc]: CSPC });
    }
    expect(await cspis(), "no CSPI before its claims are Bound").to.deep.equal([]);
    expect(parent.status).to.include({
      desiredInstances: 1,
      provisionedInstances: 0,
      observedGeneration: parent.metadata.generation,
    });
    const messages = (parent.status.conditions ?? []).map((c: { message: string }) => c.message).join("\n");
    for (const device of DEVICES) expect(messages).to.contain(device);
  });

  it("once NDM binds the claims, the CSPI appears, and the decorator gives it one pool Deployment", async () => {
    for (const claim of await claims()) {
      const path = `/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims/${claim.metadata.name}`;
      const bound = await cluster.request(
        cluster.admin,
        "PATCH",
        path,
        { status: { phase: "Bound" } },
        "application/merge-patch+json",
      );
      expect(bound.status).to.equal(200);
    }
    await driver.converge(NS);

    const parent = await theCspc();
    const [cspi, ...others] = await cspis();
    expect(others).to.deep.equal([]);
    expect(cspi.metadata.ownerReferences).to.deep.equal([
      {
        apiVersion: API_VERSION,
        kind: KIND.cspc,
        name: CSPC,
        uid: parent.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(cspi.metadata.labels).to.include({
      [LABEL.cspc]: CSPC,
      [LABEL.hostname]: NODE,
      [CONTROLLER_UID]: parent.metadata.uid,
    });
    expect(cspi.metadata.finalizers).to.include(`metacontroller.io/decoratorcontroller-${DECORATOR}`);
    expect(cspi.spec.hostName).to.equal(NODE);
    expect(cspi.spec.raidGroups[0].blockDevices).to.deep.equal(
      DEVICES.map((name) => ({
        blockDeviceName: name,
        capacity: 10 * GIB,
        devLink: `/dev/disk/by-id/scsi-0QEMU_${name}`,
      })),
    );

    const [deployment, ...moreDeployments] = await deployments();
    expect(moreDeployments).to.deep.equal([]);
    expect(deployment.metadata.name).to.equal(poolDeploymentName(cspi.metadata.name));
    expect(deployment.metadata.ownerReferences).to.deep.equal([
      {
        apiVersion: API_VERSION,
        kind: KIND.cspi,
        name: cspi.metadata.name,
        uid: cspi.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(deployment.metadata.annotations).to.include({ [DECORATOR_ANNOTATION]: DECORATOR });
    expect(deployment.spec.replicas).to.equal(1);
    expect(parent.status).to.include({ desiredInstances: 1, provisionedInstances: 1, healthyInstances: 0 });
  });

  it("is a fixed point: syncing again changes nothing", async () => {
    const rounds = await driver.converge(NS);
    expect(rounds).to.deep.equal([[]]);
  });

  it("reports the pool healthy once the node daemon says ONLINE and the pool pod is available", async () => {
    const [cspi] = await cspis();
    const cspiPath = `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances/${cspi.metadata.name}`;
    const online = await patchStatus(cspiPath, {
      phase: "ONLINE",
      capacity: { total: "19Gi", free: "19Gi", used: "0" },
      readOnly: false,
      healthyReplicas: 0,
      provisionedReplicas: 0,
      lastUpdateTime: new Date().toISOString(),
    });
    expect(online.status, JSON.stringify(online.body)).to.equal(200);
    const [deployment] = await deployments();
    await markDeploymentAvailable(cluster, deployment);
    await driver.converge(NS);

    const [after] = await cspis();
    const podAvailable = after.status.conditions.find((c: { type: string }) => c.type === "PodAvailable");
    expect(podAvailable.status).to.equal("True");
    expect(after.status.phase).to.equal("ONLINE");
    expect((await theCspc()).status).to.include({
      healthyInstances: 1,
      provisionedInstances: 1,
      desiredInstances: 1,
    });
    const { stdout } = await cluster.kubectl(["get", "cspc", CSPC, "-n", NS, "--no-headers"]);
    expect(stdout.trim().split(/\s+/).slice(0, 4)).to.deep.equal([CSPC, "1", "1", "1"]);
  });

  it("brings back a pool Deployment deleted by hand", async () => {
    const [deployment] = await deployments();
    await cluster.kubectl(["delete", "deployment", deployment.metadata.name, "-n", NS, "--wait=false"]);
    expect(await deployments()).to.deep.equal([]);
    await driver.converge(NS);
    const [again] = await deployments();
    expect(again.metadata.name).to.equal(deployment.metadata.name);
    expect(again.metadata.uid).to.not.equal(deployment.metadata.uid);
  });

  it("on CSPC deletion marks the pools for removal, then removes CSPI, Deployment and claims, then lets the CSPC go", async () => {
    const [cspi] = await cspis();
    await cluster.kubectl(["delete", "cspc", CSPC, "-n", NS, "--wait=false"]);
    const first = await driver.syncComposite(COMPOSITE, NS, CSPC);
    expect(first.hook).to.equal("finalize");
    const marked = (await cspis())[0];
    expect(
      marked?.metadata.annotations?.[ANNOTATION.poolRemoval],
      "the first finalize step marks the pool",
    ).to.equal("requested");
    expect(marked?.metadata.uid).to.equal(cspi.metadata.uid);

    await driver.converge(NS);
    expect(await theCspc(), "the CSPC is gone").to.equal(undefined);
    expect(await cspis()).to.deep.equal([]);
    expect(await deployments()).to.deep.equal([]);
    expect(await claims()).to.deep.equal([]);
  });
});
