// docs/migration.md on real parts: a pool made as maya's StoragePoolClaim made it (zpool cstor-<CStorPool UID>,
// by hand, on a simulated node's own zfs-fuse) with data on it, its BlockDevices and claims as maya and NDM
// left them (claims bdc-<uid>, Bound, the devices Claimed), converted with lib/convert, applied, the claims
// adopted by the documented label. The hooks run under the Metacontroller driver against the real apiserver,
// the node daemon is the real process. The pool comes back ONLINE under the new CSPI's name with its data
// unchanged, and no claim is ever deleted, renamed or unbound (they are read throughout the test).
import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { API_VERSION, KIND, LABEL } from "../../api/constants.js";
import type { CSPI, KubeObject } from "../../api/types.js";
import { convertObjects } from "../../lib/convert/index.js";
import { SPC_LABEL } from "../../lib/convert/spc.js";
import { zpoolName } from "../../lib/names.js";
import {
  getIfPresent,
  INSTALL_NAMESPACE,
  markDeploymentAvailable,
  projectInstalled,
  waitUntil,
  type KubeCluster,
} from "../../testkit/kube.js";
import { CONTROLLER_UID, MetacontrollerDriver, serveHooks } from "../../testkit/metacontroller-driver.js";
import { DaemonProcess, shippedDaemonEnv } from "../../testkit/node-daemon-process.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";
import { MiB, requireZfs, ZfsSandbox } from "../../testkit/zfs.js";

const DEVICE_MIB = 128;
const SPC = "old-pool";
const WAIT_MS = 90_000;

describe("integration: a StoragePoolClaim's pool adopted with its data (docs/migration.md)", function () {
  this.timeout(10 * 60_000);
  let cluster: KubeCluster;
  let sandbox: ZfsSandbox;
  let node: ZfsNode;
  let daemon: DaemonProcess | undefined;
  let ns: string;
  let nodeName: string;
  const cspUid = randomUUID();
  const oldPool = `cstor-${cspUid}`;
  let devices: { name: string; path: string; claim: string }[];
  let data: { file: string; sha: string };
  /** Every claim state seen while the test ran: name → the phases and deletion marks observed. */
  const seen: { names: string[]; phases: string[]; deleting: boolean }[] = [];
  let watching = true;
  let watcher: Promise<void> | undefined;

  const api = (resource: string, name = "") =>
    `/apis/${API_VERSION}/namespaces/${ns}/${resource}${name ? `/${name}` : ""}`;
  const items = async (resource: string): Promise<KubeObject[]> =>
    ((await getIfPresent(cluster, api(resource))) as { items: KubeObject[] }).items;
  const apply = (objects: object[]) =>
    cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
  const claimsNow = async () => {
    const claims = (await items("blockdeviceclaims")) as (KubeObject & { status?: { phase?: string } })[];
    return {
      names: claims.map((c) => c.metadata.name ?? "").sort(),
      phases: claims.map((c) => c.status?.phase ?? ""),
      deleting: claims.some((c) => c.metadata.deletionTimestamp !== undefined),
    };
  };

  before(async () => {
    requireZfs();
    cluster = await projectInstalled();
    sandbox = new ZfsSandbox();
    ns = `adopt-${sandbox.id}`;
    nodeName = `adopt-node-${sandbox.id}`;
    node = await startNode(nodeName);
    devices = ["a", "b"].map((d) => ({
      name: `bd-adopt-${d}-${sandbox.id}`,
      path: sandbox.file(`adopt-${d}`, DEVICE_MIB),
      claim: `bdc-${randomUUID()}`,
    }));

    // The old operator's pool: created and filled by hand under maya's name, then left exported (its pod stopped).
    node.zpool("create", oldPool, "mirror", ...devices.map((d) => d.path));
    data = node.writeData(sandbox, `${oldPool}/vol1`);
    node.zpool("export", oldPool);

    // What maya and NDM left in the cluster: the devices Claimed by maya's claims, which are Bound.
    await apply([
      { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } },
      {
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: nodeName, labels: { [LABEL.hostname]: nodeName } },
      },
    ]);
    await apply(
      devices.flatMap((d) => [
        {
          apiVersion: API_VERSION,
          kind: KIND.blockDevice,
          metadata: { name: d.name, namespace: ns, labels: { [LABEL.hostname]: nodeName } },
          spec: {
            path: d.path,
            capacity: { storage: DEVICE_MIB * MiB },
            nodeAttributes: { nodeName },
            filesystem: { fsType: "zfs_member" },
            claimRef: { kind: KIND.blockDeviceClaim, name: d.claim, namespace: ns },
          },
          status: { claimState: "Claimed", state: "Active" },
        },
        {
          apiVersion: API_VERSION,
          kind: KIND.blockDeviceClaim,
          metadata: {
            name: d.claim,
            namespace: ns,
            labels: { [SPC_LABEL]: SPC },
            finalizers: ["storagepoolclaim.openebs.io/finalizer"],
          },
          spec: { blockDeviceName: d.name, blockDeviceNodeAttributes: { hostName: nodeName } },
          status: { phase: "Bound" },
        },
      ]),
    );
    watcher = (async () => {
      while (watching) {
        seen.push(await claimsNow());
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
  });

  after(async () => {
    watching = false;
    await watcher;
    if (daemon) await daemon.stop();
    await node?.stop();
    sandbox?.cleanup();
  });

  let cspcUid: string;

  it("converts the SPC's objects into a CSPC naming the old pool, and applying it creates nothing while the claims are not adopted", async () => {
    const old: KubeObject[] = [
      {
        apiVersion: API_VERSION,
        kind: "StoragePoolClaim",
        metadata: { name: SPC, uid: randomUUID() },
        spec: { name: SPC, type: "disk", maxPools: 1, poolSpec: { poolType: "mirrored" } },
      },
      {
        apiVersion: API_VERSION,
        kind: "CStorPool",
        metadata: {
          name: `${SPC}-x1y2`,
          uid: cspUid,
          labels: { [LABEL.hostname]: nodeName, [SPC_LABEL]: SPC },
        },
        spec: {
          group: [
            { blockDevice: devices.map((d) => ({ name: d.name, deviceID: d.path, inUseByPool: true })) },
          ],
          poolSpec: { poolType: "mirrored" },
        },
      },
      ...(await items("blockdevices")),
    ];
    const result = convertObjects(old, ns);
    expect(result.problems).to.deep.equal([]);
    const [cspc] = result.cspcs;
    expect(cspc.spec.pools[0].poolConfig?.existingPoolName).to.equal(oldPool);
    await apply([cspc]);
    cspcUid = ((await getIfPresent(cluster, api("cstorpoolclusters", SPC))) as KubeObject).metadata.uid!;

    const driver = new MetacontrollerDriver({ cluster, hookServer: await serveHooks() });
    await driver.converge(ns);
    expect(await items("cstorpoolinstances")).to.deep.equal([]);
    expect((await claimsNow()).names).to.deep.equal(devices.map((d) => d.claim).sort());
  });

  it("adopts the claims under their own names, and the node daemon imports the old pool renamed cstor-<cspi>, ONLINE, data unchanged", async () => {
    // docs/migration.md step 5 (maya's claims here have no ownerReferences to remove: no SPC CRD in this cluster).
    await cluster.kubectl([
      "-n",
      ns,
      "label",
      "bdc",
      "-l",
      `${SPC_LABEL}=${SPC}`,
      `${LABEL.cspc}=${SPC}`,
      `${CONTROLLER_UID}=${cspcUid}`,
      "--overwrite",
    ]);
    const driver = new MetacontrollerDriver({ cluster, hookServer: await serveHooks() });
    await driver.converge(ns);
    const [cspi] = (await items("cstorpoolinstances")) as CSPI[];
    expect(cspi, "the hook creates the CSPI once the adopted claims are its own").to.not.equal(undefined);
    expect(cspi.spec.poolConfig.existingPoolName).to.equal(oldPool);
    const name = cspi.metadata.name!;

    // The shipped DaemonSet's environment, watching this test's namespace (as the admin: the shipped RBAC is the
    // install namespace's); its zpool runs inside the simulated node.
    const env = (await shippedDaemonEnv(cluster, INSTALL_NAMESPACE))(nodeName);
    daemon = await DaemonProcess.start({
      env: { ...env, NAMESPACE: ns },
      kubeconfig: cluster.admin.kubeconfig,
      overrides: { ZFS_COMMAND_PREFIX: node.commandPrefixEnv, STATUS_INTERVAL_SECONDS: "3" },
    });
    let last: CSPI | undefined;
    const cspiNow = async () =>
      (last = (await getIfPresent(cluster, api("cstorpoolinstances", name))) as CSPI);
    await waitUntil(
      async () => (await cspiNow())?.status?.poolName === zpoolName(name),
      WAIT_MS,
      () => `CSPI ${name}: no pool imported: ${JSON.stringify(last?.status)}${daemon!.tail()}`,
    );
    // No kubelet here: the pool pod's availability is written by the test, then the hooks see it.
    await markDeploymentAvailable(
      cluster,
      (await getIfPresent(cluster, `/apis/apps/v1/namespaces/${ns}/deployments/${name}`)) as KubeObject,
    );
    await waitUntil(
      async () => {
        await driver.converge(ns);
        return (await cspiNow())?.status?.phase === "ONLINE";
      },
      WAIT_MS,
      () => `CSPI ${name} not ONLINE: ${JSON.stringify(last?.status)}${daemon!.tail()}`,
    );
    expect(last!.status!.poolName).to.equal(zpoolName(name));
    expect(node.pools()).to.include(zpoolName(name)).and.not.include(oldPool);
    expect(node.checksum(data.file), "the data written under the old operator").to.equal(data.sha);

    await driver.converge(ns);
    const claims = await claimsNow();
    expect(claims.names, "the adopted claims, under maya's names").to.deep.equal(
      devices.map((d) => d.claim).sort(),
    );
    expect(claims.phases).to.deep.equal(["Bound", "Bound"]);
  });

  it("never deleted, renamed or unbound a claim at any point", () => {
    expect(seen.length).to.be.greaterThan(2);
    for (const state of seen) {
      expect(state.names).to.deep.equal(devices.map((d) => d.claim).sort());
      expect(state.phases).to.deep.equal(["Bound", "Bound"]);
      expect(state.deleting).to.equal(false);
    }
  });
});
