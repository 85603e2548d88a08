// Pool pod rollouts one pool at a time (docs/adr/0028-pool-pod-rollouts-go-one-pool-at-a-time.md) on a real apiserver, with the test driver playing
// Metacontroller by the controllers we ship and the hook server answering over HTTP: a poolConfig edit that
// restarts both pool pods reaches one Deployment, the other waits until the first pool is ONLINE with its pod
// available again. Nothing runs pods here, so the test writes what the node daemon and the Deployment
// controller would report.
import { expect } from "chai";
import { ANNOTATION, API_VERSION, CSPI_CONDITION, KIND, LABEL } from "../../api/constants.js";
import {
  getIfPresent,
  markDeploymentAvailable,
  projectInstalled,
  type KubeCluster,
} from "../../testkit/kube.js";
import { MetacontrollerDriver, serveHooks } from "../../testkit/metacontroller-driver.js";

const NS = "gate-rollout";
const CSPC = "gate-pools";
const NODES = ["gate-node-1", "gate-node-2"];
const GIB = 1024 ** 3;
const RESOURCES = { limits: { memory: "4Gi" }, requests: { memory: "2Gi" } };

const setup = [
  { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
  ...NODES.flatMap((node, i) => [
    { apiVersion: "v1", kind: "Node", metadata: { name: node, labels: { [LABEL.hostname]: node } } },
    {
      apiVersion: API_VERSION,
      kind: KIND.blockDevice,
      metadata: {
        name: `${node}-bd`,
        namespace: NS,
        labels: { [LABEL.hostname]: node, "ndm.io/blockdevice-type": "blockdevice" },
      },
      spec: {
        path: `/dev/sd${"bc"[i]}`,
        capacity: { storage: 10 * GIB },
        devlinks: [{ kind: "by-id", links: [`/dev/disk/by-id/scsi-0QEMU_${node}-bd`] }],
        filesystem: {},
        nodeAttributes: { nodeName: node },
      },
      status: { claimState: "Unclaimed", state: "Active" },
    },
  ]),
];

const cspcWith = (poolConfig: object) => ({
  apiVersion: API_VERSION,
  kind: KIND.cspc,
  metadata: { name: CSPC, namespace: NS },
  spec: {
    pools: NODES.map((node) => ({
      nodeSelector: { [LABEL.hostname]: node },
      raidGroups: [{ type: "stripe", blockDevices: [{ blockDeviceName: `${node}-bd` }] }],
      poolConfig,
    })),
  },
});

describe("integration: pool pod rollouts one pool at a time (test driver + hook server + real apiserver)", function () {
  this.timeout(20 * 60_000);
  let cluster: KubeCluster;
  let driver: MetacontrollerDriver;
  /** The CSPIs holding a permit as each cspc-sync request saw them: the permits' history, one sync at a time. */
  let permitsSeen: string[][] = [];

  const list = async (resource: string, group = `apis/${API_VERSION}`): Promise<any[]> =>
    (await getIfPresent(cluster, `/${group}/namespaces/${NS}/${resource}`)).items;
  const cspis = async () =>
    (await list("cstorpoolinstances")).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const deploymentOf = async (cspi: any) =>
    (await list("deployments", "apis/apps/v1")).find(
      (d) => d.metadata.labels[LABEL.cspi] === cspi.metadata.name,
    );
  const patch = async (path: string, status: unknown) => {
    const response = await cluster.request(
      cluster.admin,
      "PATCH",
      path,
      { status },
      "application/merge-patch+json",
    );
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
  };
  const patchStatus = (path: string, status: unknown) => patch(`${path}/status`, status);
  const apply = (objects: object[]) =>
    cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
  const permitOf = (cspi: any) => cspi.metadata.annotations?.[ANNOTATION.rolloutPermit];
  const memoryLimit = async (cspi: any) =>
    (await deploymentOf(cspi)).spec.template.spec.containers[0].resources.limits?.memory;
  const progressing = async () =>
    (
      await getIfPresent(cluster, `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters/${CSPC}`)
    ).status.conditions.find((c: any) => c.type === "Progressing");

  /** What the node daemon and the Deployment controller report once a pool's current pod is up: ONLINE, available. */
  async function podUp(cspi: any): Promise<void> {
    const now = new Date().toISOString();
    await patchStatus(`/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances/${cspi.metadata.name}`, {
      phase: "ONLINE",
      capacity: { total: "9Gi", free: "9Gi", used: "0" },
      readOnly: false,
      healthyReplicas: 0,
      provisionedReplicas: 0,
      lastUpdateTime: now,
    });
    const deployment = await deploymentOf(cspi);
    await markDeploymentAvailable(cluster, deployment);
  }

  before(async () => {
    cluster = await projectInstalled();
    await apply(setup);
    driver = new MetacontrollerDriver({
      cluster,
      hookServer: await serveHooks(),
      onHookCall: async (path, request) => {
        if (!path.endsWith("/cspc-sync")) return;
        const children = Object.values<any>(request.children?.[`${KIND.cspi}.${API_VERSION}`] ?? {});
        permitsSeen.push(
          children
            .filter((c) => permitOf(c) !== undefined)
            .map((c) => c.metadata.name)
            .sort(),
        );
      },
    });
    await apply([cspcWith({ compression: "lz4" })]);
    await driver.converge(NS);
    for (const claim of await list("blockdeviceclaims")) {
      // The claims' CRD (NDM's) has no status subresource.
      await patch(`/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims/${claim.metadata.name}`, {
        phase: "Bound",
      });
    }
    await driver.converge(NS);
    for (const cspi of await cspis()) await podUp(cspi);
    await driver.converge(NS);
  });

  after(async () => {
    await cluster.kubectl(["delete", "cspc", CSPC, "-n", NS, "--wait=false", "--ignore-not-found"]);
    await driver.converge(NS);
    await cluster.kubectl(["delete", "namespace", NS, "--wait=false"]);
    await cluster.kubectl(["delete", "node", ...NODES, "--ignore-not-found"]);
  });

  it("starts with two pools ONLINE and available, no rollout pending and no permit", async () => {
    const pools = await cspis();
    expect(pools).to.have.length(2);
    for (const cspi of pools) {
      expect(cspi.status.phase).to.equal("ONLINE");
      expect(cspi.status.pendingRollout).to.equal(undefined);
      expect(permitOf(cspi)).to.equal(undefined);
    }
  });

  it("a resources edit for both pools restarts one pool pod: the first by name gets the permit and rolls, the other keeps its template", async () => {
    permitsSeen = [];
    await apply([cspcWith({ compression: "lz4", resources: RESOURCES })]);
    await driver.converge(NS);
    const [first, second] = await cspis();
    expect(await memoryLimit(first)).to.equal("4Gi");
    expect(await memoryLimit(second), "the second pool pod keeps its running template").to.equal(undefined);
    expect(permitsSeen.flat(), "only the first pool ever held a permit")
      .to.include(first.metadata.name)
      .and.not.include(second.metadata.name);
    expect(
      permitsSeen.every((held) => held.length <= 1),
      "never two permits at once",
    ).to.equal(true);
    const waiting = second.status.conditions.find((c: any) => c.type === CSPI_CONDITION.rolloutPending);
    expect(waiting).to.include({ status: "True", reason: "Waiting" });
    expect(second.status.pendingRollout).to.be.a("string");
  });

  it("the other waits while the first one's new pod is not available; the first's permit is withdrawn once its Deployment holds the template", async () => {
    const [first, second] = await cspis();
    expect(first.status.pendingRollout).to.equal(undefined);
    expect(first.status.conditions.find((c: any) => c.type === CSPI_CONDITION.rolloutPending)).to.include({
      status: "False",
      reason: "RolledOut",
    });
    expect(permitOf(first)).to.equal(undefined);
    expect(first.status.phase).to.equal("PodUnavailable");
    expect(permitOf(second)).to.equal(undefined);
    const status = await progressing();
    expect(status.status).to.equal("True");
    expect(status.message).to.contain(
      `pool pod rollout of pool ${second.metadata.name} waits until ${first.metadata.name} (PodUnavailable) is ONLINE with its pool pod available`,
    );
  });

  it("once the first pool is ONLINE with its pod available, the second rolls; when it is back, nothing is pending", async () => {
    const [first] = await cspis();
    permitsSeen = [];
    await podUp(first);
    await driver.converge(NS);
    let [, second] = await cspis();
    expect(await memoryLimit(second)).to.equal("4Gi");
    expect(permitsSeen.flat()).to.include(second.metadata.name).and.not.include(first.metadata.name);

    await podUp(second);
    await driver.converge(NS);
    [, second] = await cspis();
    expect(permitOf(second)).to.equal(undefined);
    expect(second.status.pendingRollout).to.equal(undefined);
    expect((await progressing()).status).to.equal("False");
  });
});
