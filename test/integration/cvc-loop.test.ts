// A CStorVolumeConfig through the whole control loop on a real apiserver: applied with kubectl, turned by the
// test driver (playing Metacontroller by the controller we ship) and the hook server into its Service (with a
// real ClusterIP), CStorVolume, CHAP Secret, target Deployment, replicas and disruption budget; the replicas' status (the
// node daemon's, written here by hand) rolled up into the CVC and, by the cstor-volume decorator, the CV; capacity growth reaching the replicas;
// replicaCount 3 -> 4 -> 3 one replica at a time (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md); and deletion in order,
// waiting for the node daemon to release each replica.
import { expect } from "chai";
import { ANNOTATION, API_VERSION, FINALIZER, KIND, LABEL } from "../../api/constants.js";
import { volumeChap } from "../../lib/volume/chap.js";
import { consistencyFactor } from "../../lib/volume/children.js";
import { TEST_CHAP_KEY } from "../../testkit/hook-config.js";
import { getIfPresent, projectInstalled, type KubeCluster } from "../../testkit/kube.js";
import { MetacontrollerDriver, serveHooks } from "../../testkit/metacontroller-driver.js";

const NS = "vol-loop";
const CONTROLLER = "cstor-volume-config";
const VOLUME = "pvc-loop";
const POOLS = [
  { name: "loop-pools-a", node: "vol-node-a", zone: "zone-1" },
  { name: "loop-pools-b", node: "vol-node-b", zone: "zone-1" },
  { name: "loop-pools-c", node: "vol-node-c", zone: "zone-2" },
  { name: "loop-pools-d", node: "vol-node-d", zone: "zone-3" },
];
const api = (resource: string, name = "", group = `apis/${API_VERSION}`) =>
  `/${group}/namespaces/${NS}/${resource}${name ? `/${name}` : ""}`;

describe("integration: a CStorVolumeConfig through the Metacontroller loop (test driver + hook server + real apiserver)", function () {
  this.timeout(20 * 60_000);
  let cluster: KubeCluster;
  let driver: MetacontrollerDriver;

  const get = (path: string): Promise<any> => getIfPresent(cluster, path);
  const items = async (path: string): Promise<any[]> => ((await get(path))?.items ?? []) as any[];
  const patch = async (path: string, body: object): Promise<void> => {
    const response = await cluster.request(
      cluster.admin,
      "PATCH",
      path,
      body,
      "application/merge-patch+json",
    );
    expect(response.status, `${path}: ${JSON.stringify(response.body)}`).to.equal(200);
  };
  /** Syncs the volume until a sync writes nothing: a hook that keeps changing its children never gets there. */
  const settle = async (): Promise<string[][]> => {
    const rounds: string[][] = [];
    for (let round = 0; round < 8; round++) {
      const { writes } = await driver.syncComposite(CONTROLLER, NS, VOLUME);
      rounds.push(writes);
      if (writes.length === 0) return rounds;
    }
    throw new Error(`no fixed point: ${JSON.stringify(rounds.at(-1))}`);
  };
  const apply = (object: object) =>
    cluster.kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(object) });
  const cvc = (capacity: string) => ({
    apiVersion: API_VERSION,
    kind: KIND.cvc,
    metadata: { name: VOLUME, namespace: NS },
    spec: { capacity, cstorPoolCluster: "loop-pools", replicaCount: 3 },
  });

  before(async () => {
    cluster = await projectInstalled();
    driver = new MetacontrollerDriver({ cluster, hookServer: await serveHooks() });
    await apply({ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
    for (const { node, zone } of POOLS) {
      await apply({
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: node, labels: { [LABEL.hostname]: node, "topology.kubernetes.io/zone": zone } },
      });
    }
    await apply({
      apiVersion: API_VERSION,
      kind: KIND.cspc,
      metadata: { name: "loop-pools", namespace: NS },
      spec: {
        pools: POOLS.map(({ node }) => ({
          nodeSelector: { [LABEL.hostname]: node },
          raidGroups: [{ type: "stripe", blockDevices: [{ blockDeviceName: `${node}-bd` }] }],
        })),
      },
    });
    // The pools as cspc-sync, cspi-sync and the node daemon leave them: ONLINE, pool pod available, 20Gi free.
    for (const { name, node } of POOLS) {
      await apply({
        apiVersion: API_VERSION,
        kind: KIND.cspi,
        metadata: { name, namespace: NS, labels: { [LABEL.cspc]: "loop-pools", [LABEL.hostname]: node } },
        spec: {
          hostName: node,
          nodeSelector: { [LABEL.hostname]: node },
          poolConfig: { compression: "off", roThresholdLimit: 85 },
          raidGroups: [
            {
              type: "stripe",
              blockDevices: [
                { blockDeviceName: `${node}-bd`, devLink: "/dev/sdb", capacity: 32 * 1024 ** 3 },
              ],
            },
          ],
        },
      });
      const free = name === "loop-pools-a" ? "8Gi" : "20Gi";
      await patch(api("cstorpoolinstances", `${name}/status`), {
        status: {
          phase: "ONLINE",
          readOnly: false,
          capacity: { total: "29Gi", free, used: "1Gi" },
          conditions: [
            {
              type: "PodAvailable",
              status: "True",
              reason: "PoolPodAvailable",
              message: "available",
              lastTransitionTime: "2026-11-23T00:00:00Z",
            },
          ],
        },
      });
    }
  });

  it("makes the Service first, then the CStorVolume at its real ClusterIP, the target, three replicas spread over the zones and the budget; a fixed point", async () => {
    await apply(cvc("10Gi"));
    const rounds = await settle();
    expect(
      rounds[0].filter((w) => w.startsWith("create ")),
      "first pass: the Service alone",
    ).to.deep.equal([`create Service ${NS}/${VOLUME}`]);

    const service = await get(api("services", VOLUME, "api/v1"));
    expect(service.spec.clusterIP).to.match(/^10\.96\.0\.\d+$/);
    expect(
      service.spec.ports.map((p: { name: string; port: number }) => `${p.name}:${p.port}`),
    ).to.deep.equal(["iscsi:3260", "metrics:9500"]);
    const cv = await get(api("cstorvolumes", VOLUME));
    expect(cv.spec).to.deep.include({
      targetIP: service.spec.clusterIP,
      targetPortal: `${service.spec.clusterIP}:3260`,
      replicationFactor: 3,
      consistencyFactor: 2,
    });
    const target = await get(api("deployments", `${VOLUME}-target`, "apis/apps/v1"));
    expect(target.spec.strategy.type).to.equal("Recreate");
    expect(target.spec.replicas).to.equal(1);
    // The CHAP Secret, derived from the test install's key, which the target reads through its env.
    const secret = await get(api("secrets", `${VOLUME}-chap`, "api/v1"));
    const chap = volumeChap(TEST_CHAP_KEY, VOLUME);
    expect(secret.type).to.equal("kubernetes.io/iscsi-chap");
    expect(secret.data).to.deep.equal({
      "node.session.auth.username": Buffer.from(chap.user).toString("base64"),
      "node.session.auth.password": Buffer.from(chap.password).toString("base64"),
    });
    const refs = target.spec.template.spec.containers[0].env
      .filter((e: any) => e.valueFrom?.secretKeyRef)
      .map((e: any) => `${e.name}=${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`);
    expect(refs).to.deep.equal([
      `CHAP_USERNAME=${VOLUME}-chap/node.session.auth.username`,
      `CHAP_PASSWORD=${VOLUME}-chap/node.session.auth.password`,
    ]);

    // pools-a has too little room; one replica per zone: pools-b (zone-1), pools-c, pools-d.
    const replicas = await items(api("cstorvolumereplicas"));
    expect(replicas.map((r) => r.metadata.labels[LABEL.replicaPool]).sort()).to.deep.equal([
      "loop-pools-b",
      "loop-pools-c",
      "loop-pools-d",
    ]);
    for (const r of replicas) {
      expect(r.metadata.finalizers).to.include(FINALIZER.replicaProtection);
      expect(r.metadata.labels).to.deep.include({
        [LABEL.replicaVolume]: VOLUME,
        [LABEL.cspc]: "loop-pools",
      });
      expect(r.spec.capacity).to.equal("10Gi");
    }
    const pdb = await get(api("poddisruptionbudgets", `${VOLUME}-pools`, "apis/policy/v1"));
    expect(pdb.spec.maxUnavailable).to.equal(1);

    const status = (await get(api("cstorvolumeconfigs", VOLUME))).status;
    expect(status).to.deep.include({
      phase: "Bound",
      pools: ["loop-pools-b", "loop-pools-c", "loop-pools-d"],
    });
    const healthy = status.conditions.find((c: { type: string }) => c.type === "ReplicasHealthy");
    expect(healthy).to.deep.include({ status: "False", reason: "Init" });
    const credentials = status.conditions.find((c: { type: string }) => c.type === "TargetCredentials");
    expect(credentials).to.deep.include({ status: "True", reason: "Derived" });
    const { stdout } = await cluster.kubectl(["get", "cvc", VOLUME, "-n", NS]);
    expect(stdout).to.match(/pvc-loop\s+10Gi\s+loop-pools\s+3\s+Bound/);
  });

  it("rolls the replicas' status up: Healthy, and the capacity every replica reached", async () => {
    for (const r of await items(api("cstorvolumereplicas"))) {
      await patch(api("cstorvolumereplicas", `${r.metadata.name}/status`), {
        status: { phase: "Healthy", capacity: { total: "10Gi", used: "1Mi" } },
      });
    }
    await settle();
    const status = (await get(api("cstorvolumeconfigs", VOLUME))).status;
    expect(status.capacity).to.equal("10Gi");
    // The CStorVolume's status, which only the cstor-volume decorator writes.
    await driver.syncDecorator("cstor-volume", API_VERSION, "cstorvolumes", NS, VOLUME);
    expect((await get(api("cstorvolumes", VOLUME))).status).to.deep.include({
      phase: "Healthy",
      healthyReplicas: 3,
      capacity: "10Gi",
    });
    const { stdout } = await cluster.kubectl(["get", "cv", VOLUME, "-n", NS]);
    expect(stdout).to.match(/pvc-loop\s+10Gi\s+Healthy\s+3\s+2\s+3/);
    expect(status.conditions.find((c: { type: string }) => c.type === "ReplicasHealthy")).to.deep.include({
      status: "True",
      reason: "Healthy",
    });
  });

  it("grows the CStorVolume and every replica with the volume", async () => {
    await apply(cvc("12Gi"));
    await settle();
    expect((await get(api("cstorvolumes", VOLUME))).spec.capacity).to.equal("12Gi");
    expect((await items(api("cstorvolumereplicas"))).map((r) => r.spec.capacity)).to.deep.equal([
      "12Gi",
      "12Gi",
      "12Gi",
    ]);
    expect(
      (await get(api("cstorvolumeconfigs", VOLUME))).status.capacity,
      "until the replicas report 12Gi",
    ).to.equal("10Gi");
  });

  /** The replicas as the apiserver holds them, checked after every sync: never below the consistency factor. */
  const observeReplicas = async (): Promise<any[]> => {
    const replicas = await items(api("cstorvolumereplicas"));
    const desired = (await get(api("cstorvolumeconfigs", VOLUME))).spec.replicaCount;
    const serving = replicas.filter((r) => !r.metadata.deletionTimestamp && r.status?.phase === "Healthy");
    expect(serving.length, `Healthy replicas at replicaCount ${desired}`).to.be.at.least(
      consistencyFactor(desired),
    );
    return replicas;
  };
  const replicaChange = async () =>
    (await get(api("cstorvolumeconfigs", VOLUME))).status.conditions.find(
      (c: { type: string }) => c.type === "ReplicaChange",
    );

  it("scales up to 4: one new replica on the fourth pool, rebuilding until the target says it caught up, then counted", async () => {
    // The node daemon reports room freed on pools-a, so the fourth replica (12Gi) fits there.
    await patch(api("cstorpoolinstances", "loop-pools-a/status"), {
      status: { capacity: { total: "29Gi", free: "20Gi", used: "9Gi" } },
    });
    const before = (await observeReplicas()).map((r) => r.metadata.name).sort();
    await patch(api("cstorvolumeconfigs", VOLUME), { spec: { replicaCount: 4 } });
    let replicas: any[];
    for (let round = 0; ; round++) {
      expect(round, "scale-up converges").to.be.below(8);
      const { writes } = await driver.syncComposite(CONTROLLER, NS, VOLUME);
      replicas = await observeReplicas();
      expect(replicas.length, `round ${round}: one replica added at most`).to.be.at.most(4);
      if (writes.length === 0) break;
    }
    const added = replicas.filter((r) => !before.includes(r.metadata.name));
    expect(
      added.map((r) => r.metadata.name),
      "exactly one new replica",
    ).to.deep.equal(["pvc-loop-loop-pools-a"]);
    const [fresh] = added;
    expect(fresh.metadata.labels[LABEL.replicaPool]).to.equal("loop-pools-a");
    expect(fresh.spec.capacity).to.equal("12Gi");
    const since = fresh.metadata.annotations?.[ANNOTATION.rebuildingSince];
    expect(since, "annotated rebuilding").to.be.a("string");
    const status = (await get(api("cstorvolumeconfigs", VOLUME))).status;
    expect(status.pools).to.deep.equal(["loop-pools-a", "loop-pools-b", "loop-pools-c", "loop-pools-d"]);
    expect(status.rebuildingReplicas).to.deep.equal([
      { name: "pvc-loop-loop-pools-a", pool: "loop-pools-a", since },
    ]);
    const rebuilding = await replicaChange();
    expect(rebuilding).to.deep.include({ status: "True", reason: "Rebuilding" });
    expect(rebuilding.message).to.contain(
      `waiting for pvc-loop-loop-pools-a on loop-pools-a (since ${since}) to catch up`,
    );

    // Healthy from the node daemon is not enough: the replica still rebuilds until the target confirms.
    await patch(api("cstorvolumereplicas", `${fresh.metadata.name}/status`), {
      status: { phase: "Healthy", capacity: { total: "12Gi", used: "1Mi" } },
    });
    await settle();
    expect(
      (await get(api("cstorvolumeconfigs", VOLUME))).status.rebuildingReplicas,
      "Healthy but not caught up",
    ).to.have.length(1);
    await patch(api("cstorvolumereplicas", fresh.metadata.name), {
      metadata: { annotations: { [ANNOTATION.replicaCaughtUp]: "true" } },
    });
    await settle();
    const counted = (await get(api("cstorvolumeconfigs", VOLUME))).status;
    expect(counted.rebuildingReplicas ?? [], "caught up: counted").to.deep.equal([]);
    expect(await replicaChange()).to.deep.include({ status: "False", reason: "Settled" });
    expect(await observeReplicas()).to.have.length(4);
  });

  it("scales down to 3: one replica deleted, never two at once, the others Healthy throughout", async () => {
    await patch(api("cstorvolumeconfigs", VOLUME), { spec: { replicaCount: 3 } });
    const deleted = new Set<string>();
    // Syncs one at a time, looking at the replicas after each; the test plays the node daemon, which destroys
    // a deleted replica and drops its finalizer, only once the loop is waiting for it.
    for (let round = 0; ; round++) {
      expect(round, "scale-down converges").to.be.below(12);
      const { writes } = await driver.syncComposite(CONTROLLER, NS, VOLUME);
      const replicas = await observeReplicas();
      const deleting = replicas.filter((r) => r.metadata.deletionTimestamp);
      expect(deleting.length, `round ${round}: replicas being deleted`).to.be.at.most(1);
      for (const r of deleting) deleted.add(r.metadata.name);
      if (writes.length > 0) continue;
      if (deleting.length === 0) break;
      await patch(api("cstorvolumereplicas", deleting[0].metadata.name), { metadata: { finalizers: null } });
    }
    // pools-a and pools-b share zone-1: the last of them by name goes.
    expect([...deleted]).to.deep.equal(["pvc-loop-loop-pools-b"]);
    const replicas = await observeReplicas();
    expect(replicas.map((r) => r.metadata.labels[LABEL.replicaPool]).sort()).to.deep.equal([
      "loop-pools-a",
      "loop-pools-c",
      "loop-pools-d",
    ]);
    expect((await get(api("cstorvolumeconfigs", VOLUME))).status.pools).to.deep.equal([
      "loop-pools-a",
      "loop-pools-c",
      "loop-pools-d",
    ]);
    expect(await replicaChange()).to.deep.include({ status: "False", reason: "Settled" });
  });

  it("deletes the target first, then the replicas, and lets the volume go once the node daemon released them", async () => {
    await cluster.kubectl(["delete", "cvc", VOLUME, "-n", NS, "--wait=false"]);
    await driver.syncComposite(CONTROLLER, NS, VOLUME);
    expect(await get(api("deployments", `${VOLUME}-target`, "apis/apps/v1")), "target gone").to.equal(
      undefined,
    );
    expect(await get(api("services", VOLUME, "api/v1"))).to.equal(undefined);
    expect(await get(api("secrets", `${VOLUME}-chap`, "api/v1")), "CHAP Secret gone").to.equal(undefined);
    expect(await get(api("cstorvolumes", VOLUME))).to.equal(undefined);
    expect(await items(api("cstorvolumereplicas")), "replicas kept while the target goes").to.have.length(3);

    await driver.syncComposite(CONTROLLER, NS, VOLUME);
    const replicas = await items(api("cstorvolumereplicas"));
    expect(
      replicas.every((r) => r.metadata.deletionTimestamp),
      "replicas deleted, held by their finalizer",
    ).to.equal(true);
    await driver.syncComposite(CONTROLLER, NS, VOLUME);
    const deleting = (await get(api("cstorvolumeconfigs", VOLUME))).status.conditions.find(
      (c: { type: string }) => c.type === "Deleting",
    );
    expect(deleting.reason).to.equal("DestroyingReplicas");
    expect(deleting.message).to.contain(
      "pvc-loop-loop-pools-a on pool loop-pools-a (node vol-node-a, deleting, finalizers cstorvolumereplica.openebs.io/finalizer)",
    );

    // The node daemon destroys each replica and removes its finalizer.
    for (const r of replicas)
      await patch(api("cstorvolumereplicas", r.metadata.name), { metadata: { finalizers: null } });
    await driver.syncComposite(CONTROLLER, NS, VOLUME);
    expect(await get(api("cstorvolumeconfigs", VOLUME)), "finalized and gone").to.equal(undefined);
  });
});
