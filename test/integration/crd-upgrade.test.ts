// Reading tolerantly after a CRD upgrade, on a real kube-apiserver: objects stored under the previous CRDs
// (a CSPI condition without `message`, which the current schema requires; a BlockDevice whose capacity an
// older NDM wrote as a quantity string) stay as they are when the CRDs are upgraded, since the API server
// never re-validates stored objects. A sync through the hooks (test driver playing Metacontroller) must still
// work with what the API server returns: the first is used, the second is named in the CSPC status and left
// out, and everything else proceeds.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { parse } from "yaml";
import { API_VERSION, KIND, LABEL } from "../../api/constants.js";
import { poolDeploymentName } from "../../lib/names.js";
import { projectInstalled, repoPath, type KubeCluster } from "../../testkit/kube.js";
import { MetacontrollerDriver, serveHooks, type Obj } from "../../testkit/metacontroller-driver.js";

const NS = "crd-upgrade";
const NODE = "upgrade-node-1";
const CSPC = "upgrade-stripe";
const DEVICE = "upgrade-bd-1";
const SPARE = "upgrade-bd-spare";
const GIB = 1024 ** 3;

const currentCrd = (path: string): Obj => parse(readFileSync(repoPath(path), "utf8"));
const schemaOf = (crd: Obj): Obj => crd.spec.versions[0].schema.openAPIV3Schema;

/** The previous release, as far as this test needs: conditions without a required message... */
function previousCspiCrd(): Obj {
  const crd = currentCrd("metacontroller/crds/cstorpoolinstances.yaml");
  const condition = schemaOf(crd).properties.status.properties.conditions.items;
  condition.required = condition.required.filter((field: string) => field !== "message");
  return crd;
}

/** ...and NDM's BlockDevice with the capacity as a quantity string. */
function previousBlockDeviceCrd(): Obj {
  const crd = currentCrd("metacontroller/crds/ndm/blockdevices.yaml");
  schemaOf(crd).properties.spec.properties.capacity.properties.storage = { type: "string" };
  return crd;
}

const blockDevice = (name: string, storage: number | string) => ({
  apiVersion: API_VERSION,
  kind: KIND.blockDevice,
  metadata: { name, namespace: NS, labels: { [LABEL.hostname]: NODE } },
  spec: { path: `/dev/${name}`, capacity: { storage }, filesystem: {}, nodeAttributes: { nodeName: NODE } },
  status: { claimState: "Unclaimed", state: "Active" },
});

describe("integration: reading tolerantly what the API server stored under the previous CRDs", function () {
  this.timeout(20 * 60_000);
  let cluster: KubeCluster;
  let driver: MetacontrollerDriver;

  const apply = (objects: unknown[]) =>
    cluster.kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
  const upgradeCrds = async () => {
    await cluster.kubectl([
      "apply",
      "--server-side",
      "--force-conflicts",
      "-k",
      repoPath("metacontroller/crds/ndm"),
    ]);
    await cluster.kubectl([
      "apply",
      "--server-side",
      "--force-conflicts",
      "-k",
      repoPath("metacontroller/crds"),
    ]);
  };
  const get = async (path: string): Promise<Obj> => (await cluster.request(cluster.admin, "GET", path)).body;
  const cspiPath = (name = "") =>
    `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances${name ? `/${name}` : ""}`;
  const theCspi = async (): Promise<Obj> => (await get(cspiPath())).items[0];
  const theCspc = () => get(`/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters/${CSPC}`);

  before(async () => {
    cluster = await projectInstalled();
    driver = new MetacontrollerDriver({ cluster, hookServer: await serveHooks() });
    await apply([previousCspiCrd()]);
  });

  after(async () => {
    // The shared API server keeps the current CRDs for every other test, and no quantity-string BlockDevice.
    await cluster.kubectl(["delete", "blockdevice", SPARE, "-n", NS, "--ignore-not-found"]);
    await upgradeCrds();
  });

  it("under the previous CRDs: a pool is provisioned, a node daemon writes a condition without message, an older NDM a string capacity", async () => {
    await apply([
      { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
      { apiVersion: "v1", kind: "Node", metadata: { name: NODE, labels: { [LABEL.hostname]: NODE } } },
      blockDevice(DEVICE, 10 * GIB),
      {
        apiVersion: API_VERSION,
        kind: KIND.cspc,
        metadata: { name: CSPC, namespace: NS },
        spec: {
          pools: [
            {
              nodeSelector: { [LABEL.hostname]: NODE },
              raidGroups: [{ type: "stripe", blockDevices: [{ blockDeviceName: DEVICE }] }],
            },
          ],
        },
      },
    ]);
    await driver.converge(NS);
    const [claim] = (await get(`/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims`)).items;
    const bound = await cluster.request(
      cluster.admin,
      "PATCH",
      `/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims/${claim.metadata.name}`,
      { status: { phase: "Bound" } },
      "application/merge-patch+json",
    );
    expect(bound.status).to.equal(200);
    await driver.converge(NS);

    const cspi = await theCspi();
    const conditions = [
      ...cspi.status.conditions,
      {
        type: "PoolExpansion",
        status: "False",
        reason: "PoolExpansionSuccessful",
        lastTransitionTime: "2026-11-21T09:00:00Z",
      },
    ];
    const report = await cluster.request(
      cluster.admin,
      "PATCH",
      `${cspiPath(cspi.metadata.name)}/status`,
      { status: { phase: "ONLINE", conditions } },
      "application/merge-patch+json",
    );
    expect(report.status, JSON.stringify(report.body)).to.equal(200);
    // A device discovered while an NDM of the previous release (and its CRD) ran.
    await apply([previousBlockDeviceCrd()]);
    await apply([blockDevice(SPARE, "10Gi")]);
  });

  it("after the upgrade the API server serves both as stored, and would refuse them now", async () => {
    await upgradeCrds();
    const cspi = await theCspi();
    const expansion = cspi.status.conditions.find((c: Obj) => c.type === "PoolExpansion");
    expect(expansion).to.not.have.property("message");
    const spare = await get(`/apis/${API_VERSION}/namespaces/${NS}/blockdevices/${SPARE}`);
    expect(spare.spec.capacity.storage).to.equal("10Gi");
    const refused = await cluster.request(
      cluster.admin,
      "POST",
      `/apis/${API_VERSION}/namespaces/${NS}/blockdevices`,
      blockDevice("upgrade-bd-new", "10Gi"),
    );
    expect(refused.status, "the current CRD is in force").to.equal(422);
  });

  it("a sync works on them: the condition is used and kept, the BlockDevice is named in the CSPC status and left out, the rest proceeds", async () => {
    const cspiBefore = await theCspi();
    await cluster.request(
      cluster.admin,
      "DELETE",
      `/apis/apps/v1/namespaces/${NS}/deployments/${poolDeploymentName(cspiBefore.metadata.name)}`,
    );
    const rounds = await driver.converge(NS);
    expect(rounds.flat(), "the pool Deployment deleted meanwhile comes back").to.include(
      `create Deployment ${NS}/${poolDeploymentName(cspiBefore.metadata.name)}`,
    );
    expect(
      rounds.flat(),
      "the CSPI status, with the old condition in it, written under the current CRD",
    ).to.include(`status CStorPoolInstance ${NS}/${cspiBefore.metadata.name}`);

    const cspi = await theCspi();
    const types = cspi.status.conditions.map((c: Obj) => c.type);
    expect(types).to.include.members(["PodAvailable", "NodeDaemonHeartbeat", "PoolExpansion"]);
    expect(
      cspi.status.conditions.find((c: Obj) => c.type === "PoolExpansion"),
      "the node daemon's condition as it wrote it",
    ).to.not.have.property("message");

    const cspc = await theCspc();
    const unreadable = cspc.status.conditions.find((c: Obj) => c.type === "ObjectsUnreadable");
    expect(unreadable).to.include({ status: "True", reason: "ObjectsSkipped" });
    expect(unreadable.message).to.contain(
      `BlockDevice ${NS}/${SPARE}: spec.capacity.storage must be of type integer`,
    );
    expect(cspc.status).to.include({ desiredInstances: 1, provisionedInstances: 1 });

    await cluster.kubectl(["delete", "blockdevice", SPARE, "-n", NS]);
    await driver.converge(NS);
    expect((await theCspc()).status.conditions.find((c: Obj) => c.type === "ObjectsUnreadable")).to.include({
      status: "False",
      reason: "AllObjectsRead",
    });
  });
});
