// docs/install.md's uninstall that keeps the data, on the real apiserver: the controllers go first (so nothing
// marks a pool for removal or deletes a claim), the pool objects are taken down by hand, the CSPC is deleted
// with its claims orphaned (kept Bound, so NDM never wipes the disks), and a reinstall with the same CSPC
// adopts the same claims and recreates the CSPI under the same name (the node daemon then imports the pool).
// There is no garbage collector here: the test does the GC's orphaning itself, and says where.
import { expect } from "chai";
import { ANNOTATION, API_VERSION, KIND, LABEL } from "../../api/constants.js";
import { getIfPresent, projectInstalled, repoPath, type KubeCluster } from "../../testkit/kube.js";
import { CONTROLLER_UID, MetacontrollerDriver, serveHooks } from "../../testkit/metacontroller-driver.js";

const NS = "mc-uninstall";
const NODE = "uninstall-node-1";
const CSPC = "keep-my-data";
const DEVICES = ["keep-bd-1", "keep-bd-2"];
const MERGE = "application/merge-patch+json";

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
      },
    ],
  },
};
const setup = [
  { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
  { apiVersion: "v1", kind: "Node", metadata: { name: NODE, labels: { [LABEL.hostname]: NODE } } },
  ...DEVICES.map((name) => ({
    apiVersion: API_VERSION,
    kind: KIND.blockDevice,
    metadata: { name, namespace: NS, labels: { [LABEL.hostname]: NODE } },
    spec: {
      path: `/dev/${name}`,
      capacity: { storage: 10 * 1024 ** 3 },
      nodeAttributes: { nodeName: NODE },
      filesystem: {},
    },
    status: { claimState: "Unclaimed", state: "Active" },
  })),
];

describe("integration: uninstall without losing data, and reinstall (docs/install.md)", function () {
  this.timeout(20 * 60_000);
  let cluster: KubeCluster;
  let driver: MetacontrollerDriver;
  const api = (resource: string, name = "", group = `apis/${API_VERSION}`) =>
    `/${group}/namespaces/${NS}/${resource}${name ? `/${name}` : ""}`;
  const get = (path: string): Promise<any> => getIfPresent(cluster, path);
  const items = async (path: string): Promise<any[]> => (await get(path)).items;
  const patch = async (path: string, body: unknown): Promise<void> => {
    const response = await cluster.request(cluster.admin, "PATCH", path, body, MERGE);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
  };
  const kubectl = (...args: string[]) => cluster.kubectl(args);

  let original: { cspi: string; claimUids: string[] };

  before(async () => {
    cluster = await projectInstalled();
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: [...setup, cspc].map((o) => JSON.stringify(o)).join("\n"),
    });
    driver = new MetacontrollerDriver({ cluster, hookServer: await serveHooks() });
    await driver.converge(NS);
    for (const claim of await items(api("blockdeviceclaims")))
      await patch(api("blockdeviceclaims", claim.metadata.name), { status: { phase: "Bound" } });
    await driver.converge(NS);
    const [cspi] = await items(api("cstorpoolinstances"));
    expect(await items(api("deployments", "", "apis/apps/v1"))).to.have.length(1);
    original = {
      cspi: cspi.metadata.name,
      claimUids: (await items(api("blockdeviceclaims"))).map((c) => c.metadata.uid).sort(),
    };
  });

  after(async () => {
    // Whatever happened, leave the shared cluster with the controllers installed.
    await cluster?.kubectl(["apply", "--server-side", "-k", repoPath("metacontroller/default")]);
  });

  it("1. removing the controllers stops all reconciliation and leaves every pool object in place", async () => {
    await kubectl("delete", "compositecontroller", "cstor-pool-cluster");
    await kubectl("delete", "decoratorcontroller", "cstor-pool-instance");
    expect(await items(api("cstorpoolinstances"))).to.have.length(1);
    expect(await items(api("blockdeviceclaims"))).to.have.length(2);
    const failure = await driver.converge(NS).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(failure, "with no controllers there is nothing to sync").to.equal(undefined);
  });

  it("2. the pool Deployments and CSPIs are deleted by hand, never marked for removal", async () => {
    await kubectl("delete", "deployment", "-n", NS, "-l", `${LABEL.cspc}=${CSPC}`);
    await kubectl("delete", "cspi", "-n", NS, "-l", `${LABEL.cspc}=${CSPC}`, "--wait=false");
    const [cspi] = await items(api("cstorpoolinstances"));
    expect(
      cspi.metadata.annotations?.[ANNOTATION.poolRemoval],
      "not marked: the node daemon exports, keeps the data",
    ).to.equal(undefined);
    // The node daemon (not running here) would export the pool and drop openebs.io/pool-protection; what is
    // left is the decorator's finalizer, which the docs strip once the pool is exported.
    expect(cspi.metadata.finalizers).to.deep.equal([
      "metacontroller.io/decoratorcontroller-cstor-pool-instance",
    ]);
    await kubectl(
      "patch",
      "cspi",
      cspi.metadata.name,
      "-n",
      NS,
      "--type=merge",
      "-p",
      '{"metadata":{"finalizers":null}}',
    );
    expect(await items(api("cstorpoolinstances"))).to.deep.equal([]);
  });

  it("3. the CSPC goes with its claims orphaned: they stay Bound, so NDM never releases and wipes the disks", async () => {
    await kubectl("patch", "cspc", CSPC, "-n", NS, "--type=merge", "-p", '{"metadata":{"finalizers":null}}');
    await kubectl("delete", "cspc", CSPC, "-n", NS, "--cascade=orphan", "--wait=false");
    // What the garbage collector does for --cascade=orphan: drop the owner reference, then the "orphan" finalizer.
    for (const claim of await items(api("blockdeviceclaims")))
      await patch(api("blockdeviceclaims", claim.metadata.name), { metadata: { ownerReferences: null } });
    await patch(api("cstorpoolclusters", CSPC), { metadata: { finalizers: null } });

    expect(await get(api("cstorpoolclusters", CSPC))).to.equal(undefined);
    const claims = await items(api("blockdeviceclaims"));
    expect(claims.map((c) => c.metadata.uid).sort()).to.deep.equal(original.claimUids);
    expect(claims.every((c) => c.status.phase === "Bound")).to.equal(true);
  });

  it("4. reinstalled with the same CSPC, and the claims relabelled, it adopts the claims and recreates the same CSPI", async () => {
    await cluster.kubectl(["apply", "--server-side", "-k", repoPath("metacontroller/default")]);
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(cspc) });
    await driver.converge(NS);
    expect(
      await items(api("cstorpoolinstances")),
      "no pool is built on claims it does not own",
    ).to.deep.equal([]);

    const uid = (await get(api("cstorpoolclusters", CSPC))).metadata.uid;
    await kubectl(
      "label",
      "bdc",
      "-n",
      NS,
      "-l",
      `${LABEL.cspc}=${CSPC}`,
      `${CONTROLLER_UID}=${uid}`,
      "--overwrite",
    );
    await driver.converge(NS);

    const claims = await items(api("blockdeviceclaims"));
    expect(claims.map((c) => c.metadata.uid).sort(), "the same claims, adopted").to.deep.equal(
      original.claimUids,
    );
    for (const claim of claims)
      expect(claim.metadata.ownerReferences.map((r: { uid: string }) => r.uid)).to.deep.equal([uid]);
    const [cspi] = await items(api("cstorpoolinstances"));
    expect(
      cspi.metadata.name,
      "the same CSPI name, so the same zpool name: the node daemon imports it",
    ).to.equal(original.cspi);
    expect(await items(api("deployments", "", "apis/apps/v1"))).to.have.length(1);
  });
});
