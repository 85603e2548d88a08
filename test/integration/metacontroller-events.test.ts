// When Metacontroller syncs, not only what a sync does: the shipped controllers under the event loop of
// Metacontroller v4.17.2 (testkit/metacontroller-loop.ts: informer events, ignoreStatusChanges, the
// decorator giving a sync up on a conflict, resyncs on a virtual clock), the hooks over HTTP, a real apiserver.
// The node daemon's status writes land in the middle of a sync, as they do on a live cluster.
import { expect } from "chai";
import { API_VERSION, DEFAULTS, KIND, LABEL } from "../../api/constants.js";
import { poolDeploymentName } from "../../lib/names.js";
import { markDeploymentAvailable, projectInstalled, type KubeCluster } from "../../testkit/kube.js";
import { MetacontrollerDriver, serveHooks, type Obj } from "../../testkit/metacontroller-driver.js";
import { MetacontrollerLoop } from "../../testkit/metacontroller-loop.js";

const NS = "mc-events";
const NODE = "events-node-1";
const CSPC = "events-stripe";
const DEVICE = "events-bd-1";
const GIB = 1024 ** 3;

const setup = [
  { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
  {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: NODE, labels: { [LABEL.hostname]: NODE, "kubernetes.io/os": "linux" } },
  },
  {
    apiVersion: API_VERSION,
    kind: KIND.blockDevice,
    metadata: {
      name: DEVICE,
      namespace: NS,
      labels: { [LABEL.hostname]: NODE, "ndm.io/blockdevice-type": "blockdevice" },
    },
    spec: {
      path: "/dev/sdb",
      capacity: { storage: 10 * GIB },
      filesystem: {},
      nodeAttributes: { nodeName: NODE },
    },
    status: { claimState: "Unclaimed", state: "Active" },
  },
];
const cspc = (compression: string) => ({
  apiVersion: API_VERSION,
  kind: KIND.cspc,
  metadata: { name: CSPC, namespace: NS },
  spec: {
    pools: [
      {
        nodeSelector: { [LABEL.hostname]: NODE },
        raidGroups: [{ type: "stripe", blockDevices: [{ blockDeviceName: DEVICE }] }],
        poolConfig: { compression },
      },
    ],
  },
});

describe("integration: the shipped controllers under Metacontroller's event loop, racing the node daemon", function () {
  this.timeout(20 * 60_000);
  let cluster: KubeCluster;
  let loop: MetacontrollerLoop;
  /** What the node daemon writes at the next call of a hook path, while that sync is in flight. */
  const raceAt = new Map<string, () => Promise<void>>();

  const list = async (resource: string, group = `apis/${API_VERSION}`): Promise<Obj[]> =>
    (await cluster.request(cluster.admin, "GET", `/${group}/namespaces/${NS}/${resource}`)).body.items;
  const theCspi = async (): Promise<Obj> => {
    const [cspi, ...others] = await list("cstorpoolinstances");
    expect(others).to.deep.equal([]);
    return cspi;
  };
  const deployments = () => list("deployments", "apis/apps/v1");
  /** The node daemon's report, as it merge-patches it: phase and heartbeat. */
  const nodeDaemonReport = (cspi: string, phase: string) => async () => {
    const path = `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances/${cspi}/status`;
    const status = { phase, lastUpdateTime: new Date().toISOString().replace(/\.\d+Z$/, "Z") };
    const patched = await cluster.request(
      cluster.admin,
      "PATCH",
      path,
      { status },
      "application/merge-patch+json",
    );
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
  };

  before(async () => {
    cluster = await projectInstalled();
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: setup.map((o) => JSON.stringify(o)).join("\n"),
    });
    const driver = new MetacontrollerDriver({
      cluster,
      hookServer: await serveHooks(),
      onHookCall: async (path) => {
        const race = raceAt.get(path);
        raceAt.delete(path);
        await race?.();
      },
    });
    loop = new MetacontrollerLoop(driver, NS);
    await loop.start();
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(cspc("lz4")) });
    await loop.run();
    const [claim] = await list("blockdeviceclaims");
    const path = `/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims/${claim.metadata.name}`;
    expect(
      (
        await cluster.request(
          cluster.admin,
          "PATCH",
          path,
          { status: { phase: "Bound" } },
          "application/merge-patch+json",
        )
      ).status,
    ).to.equal(200);
  });

  it("a node daemon report during the decorator's first sync: the conflict gives that sync up, and the pool Deployment still comes within seconds", async () => {
    // The CSPI appears on the claim's event; the decorator's first sync of it races the daemon's first report.
    raceAt.set("/hooks/cspi-sync", async () =>
      nodeDaemonReport((await theCspi()).metadata.name, "Pending")(),
    );
    await loop.run();
    const cspi = await theCspi();
    const raced = loop.syncs.find(
      (s) =>
        s.controller === "cstor-pool-instance" && s.outcome.writes.some((w) => w.startsWith("conflict:")),
    );
    expect(raced, "the decorator's status write lost the race").to.not.equal(undefined);
    expect(
      raced!.outcome.writes.filter((w) => w.startsWith("create")),
      "given up before attachments",
    ).to.deep.equal([]);
    expect(cspi.status.phase, "the daemon's report stands").to.equal("Pending");
    expect(
      await deployments(),
      "the daemon's status-only write triggers no sync (ignoreStatusChanges)",
    ).to.deep.equal([]);

    const conflictAt = loop.now;
    await loop.advance(10);
    const [deployment] = await deployments();
    expect(deployment?.metadata.name, "created by the hook's short resync, not a minute later").to.equal(
      poolDeploymentName(cspi.metadata.name),
    );
    const created = loop.syncs.find((s) =>
      s.outcome.writes.includes(`create Deployment ${NS}/${deployment.metadata.name}`),
    )!;
    expect(created.at - conflictAt).to.be.at.most(10);
  });

  it("once the pool Deployment and the status are as the hook wants them, the hook asks for no short resync: no sync every few seconds", async () => {
    // The sync that created the Deployment wrote a new status too; the next short resync sees both applied.
    await loop.advance(DEFAULTS.confirmResyncSeconds);
    const cspi = await theCspi();
    const key = Object.keys(loop.pending()).find(
      (k) => k.includes("cstor-pool-instance") && k.endsWith(cspi.metadata.name),
    )!;
    expect(loop.pending()[key] - loop.now).to.be.greaterThan(10);
    const ran = await loop.advance(30);
    expect(ran.filter((s) => s.controller === "cstor-pool-instance")).to.deep.equal([]);
    expect(cspi.status.conditions.map((c: Obj) => [c.type, c.reason])).to.deep.include([
      "PodAvailable",
      "PoolPodNotReady",
    ]);
  });

  it("the composite side has no such trap: a CSPI update that loses to a daemon report is retried on that report's event", async () => {
    const before = loop.now;
    raceAt.set("/hooks/cspc-sync", nodeDaemonReport((await theCspi()).metadata.name, "ONLINE"));
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(cspc("off")) });
    await loop.run();
    const conflicts = loop.syncs.filter(
      (s) =>
        s.at >= before && s.outcome.writes.some((w) => w.startsWith("conflict: update CStorPoolInstance")),
    );
    expect(conflicts, "the race happened").to.have.length(1);
    const cspi = await theCspi();
    expect(cspi.spec.poolConfig.compression, "applied without waiting for a resync").to.equal("off");
    // The daemon's ONLINE stands (else Pending would): no kubelet runs the pool pod here, so the phase users
    // see is PodUnavailable, as both the hook and the daemon compute it.
    expect(cspi.status.phase).to.equal("PodUnavailable");
    expect(loop.now).to.equal(before);
  });

  it("a node daemon report that beats the decorator's status write: that write is given up, and the hook's short resync makes it within seconds, not a minute later", async () => {
    const podAvailable = async () =>
      ((await theCspi()).status.conditions as Obj[]).find((c) => c.type === "PodAvailable");
    expect(await podAvailable()).to.include({ status: "False" });
    raceAt.set("/hooks/cspi-sync", nodeDaemonReport((await theCspi()).metadata.name, "ONLINE"));
    const before = loop.syncs.length;
    // The kubelet's part: the pool pod is available. Its event syncs the decorator, which the daemon races.
    await markDeploymentAvailable(cluster, (await deployments())[0]);
    await loop.run();
    const raced = loop.syncs
      .slice(before)
      .filter((s) => s.controller === "cstor-pool-instance")
      .map((s) => s.outcome.writes);
    expect(raced, "the decorator's one sync lost its status write").to.deep.equal([
      [`conflict: status CStorPoolInstance ${NS}/${(await theCspi()).metadata.name}`],
    ]);
    expect(await podAvailable(), "given up").to.include({ status: "False" });

    await loop.advance(DEFAULTS.confirmResyncSeconds);
    expect(await podAvailable(), "written by the short resync").to.include({
      status: "True",
      reason: "PoolPodAvailable",
    });
    expect((await theCspi()).status.phase, "the daemon's ONLINE, served").to.equal("ONLINE");
  });
});
