// A pool that serves a replica moves to another node (docs/adr/0043-a-pool-moves-by-an-ordered-hand-over-its-pod.md):
// the CSPC's nodeSelector follows its disks to node B. Real hooks, a real apiserver, a node daemon and a zfs-fuse
// per node, and a kubelet played here that runs the pool pod (tgtd and the pool agent, testkit/pool-site.ts) on
// the node its Deployment's template names, stops the old pod first (Recreate), and reports the Deployment
// available only while the agent's /readyz says its node holds the pool. While the old pod runs, its tgtd holds
// the replica open, so the old node cannot export the pool: the hand-over works only if that pod stops first.
// The hook server runs as its process; Metacontroller is the run's (testkit/control-plane.ts): the emulator in
// `npm test` (test/integration/pool-move.test.ts), the real binary in `npm run test:e2e` (test/e2e/pool-move.e2e.ts).
import { expect } from "chai";
import { API_VERSION, KIND, LABEL } from "../../api/constants.js";
import type { CSPI, CVR } from "../../api/types.js";
import { findCondition } from "../../lib/conditions.js";
import { replicaId, zpoolName } from "../../lib/names.js";
import { replicaIqn } from "../../lib/volume/iqn.js";
import { REPLICA_FILE } from "../../zfs/layout.js";
import {
  getIfPresent,
  INSTALL_NAMESPACE,
  projectInstalled,
  waitUntil,
  type Identity,
  type KubeCluster,
} from "../../testkit/kube.js";
import { HookServer, metacontrollerFor, type Metacontroller } from "../../testkit/control-plane.js";
import type { Obj } from "../../testkit/metacontroller-driver.js";
import { DaemonProcess, shippedDaemonEnv, zfsFuseNodeOverrides } from "../../testkit/node-daemon-process.js";
import { realMetacontrollerFromEnv } from "../../testkit/real-metacontroller.js";
import { ensureDefaultServiceAccount, installedChapKey, PoolSite } from "../../testkit/pool-site.js";
import { TestNetwork } from "../../testkit/uml/network.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";
import { blockDeviceName, cvrObject, ndmBlockDevice, requireZfs, ZfsSandbox } from "../../testkit/zfs.js";

const NS = INSTALL_NAMESPACE;
const DEVICE_MIB = 128;
const WAIT_MS = 120_000;
const VOLUME = "move-vol";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The kubelet of the pool Deployment's one pod: where it runs, and whether it is available. */
class PoolKubelet {
  site: PoolSite | undefined;
  /** Every node a pod ran on, in order, and when each stopped relative to the pool's export. */
  readonly ranOn: string[] = [];

  constructor(
    private readonly cluster: KubeCluster,
    private readonly network: TestNetwork,
    private readonly nodes: ReadonlyMap<string, ZfsNode>,
    private readonly chapKey: string,
  ) {}

  /** One look at the Deployment: replace the pod if its template moved, then report availability. */
  async step(cspi: CSPI): Promise<void> {
    const deployment = await this.deployment(cspi);
    if (!deployment) return;
    const node = deployment.spec.template.spec.nodeSelector?.[LABEL.hostname] as string | undefined;
    if (this.site && this.site.nodeName !== node) {
      // Recreate: the old pod stops (the agent's SIGTERM takes its exports down) before a new one starts.
      await this.site.stop();
      this.site = undefined;
      await this.writeStatus(deployment, false);
    }
    if (!this.site && node && this.nodes.has(node)) {
      this.site = await PoolSite.start({
        cluster: this.cluster,
        network: this.network,
        node: this.nodes.get(node)!,
        nodeName: node,
        cspi: { ...cspi, spec: { ...cspi.spec, hostName: node } },
        index: this.ranOn.length,
        chapKey: this.chapKey,
      });
      this.ranOn.push(node);
    }
    const ready = this.site ? (await this.site.agent.get("/readyz")).status === 200 : false;
    await this.writeStatus(deployment, ready);
  }

  private async deployment(cspi: CSPI): Promise<Obj | undefined> {
    const list = await getIfPresent(
      this.cluster,
      `/apis/apps/v1/namespaces/${NS}/deployments?labelSelector=${encodeURIComponent(`${LABEL.cspi}=${cspi.metadata.name}`)}`,
    );
    return list?.items?.[0];
  }

  private async writeStatus(deployment: Obj, available: boolean): Promise<void> {
    const count = available ? 1 : 0;
    const response = await this.cluster.request(
      this.cluster.admin,
      "PATCH",
      `/apis/apps/v1/namespaces/${NS}/deployments/${deployment.metadata.name}/status`,
      {
        status: {
          observedGeneration: deployment.metadata.generation,
          replicas: this.site ? 1 : 0,
          updatedReplicas: this.site ? 1 : 0,
          readyReplicas: count,
          availableReplicas: count,
        },
      },
      "application/merge-patch+json",
    );
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
  }
}

/** `requireReal`: refuse to run under the emulator (the e2e file, whose preflight names the binary). */
export function describePoolMove(title: string, requireReal = false): void {
  describe(title, function () {
    this.timeout(15 * 60_000);
    let cluster: KubeCluster;
    let sandbox: ZfsSandbox;
    let network: TestNetwork;
    let identity: Identity;
    let kubelet: PoolKubelet;
    let hooks: HookServer;
    let metacontroller: Metacontroller;
    const nodes = new Map<string, ZfsNode>();
    const daemons: DaemonProcess[] = [];
    let devices: string[] = [];
    const nodeA = () => `move-a-${sandbox.id}`;
    const nodeB = () => `move-b-${sandbox.id}`;
    const cspcName = () => `move-${sandbox.id}`;

    const tails = () =>
      daemons.map((d) => d.tail()).join("") +
      (kubelet?.site?.agent.tail() ?? "") +
      (hooks?.process?.tail(10) ?? "");
    const apply = async (...objects: object[]) => {
      await cluster.kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], {
        input: objects.map((o) => JSON.stringify(o)).join("\n"),
      });
    };
    const owned = async (resource: string): Promise<Obj[]> =>
      (
        await getIfPresent(
          cluster,
          `/apis/${API_VERSION}/namespaces/${NS}/${resource}?labelSelector=${encodeURIComponent(`${LABEL.cspc}=${cspcName()}`)}`,
        )
      )?.items ?? [];
    const theCspi = async (): Promise<CSPI | undefined> => (await owned("cstorpoolinstances"))[0] as CSPI;
    const cspc = (node: string) => ({
      apiVersion: API_VERSION,
      kind: KIND.cspc,
      metadata: { name: cspcName(), namespace: NS },
      spec: {
        pools: [
          {
            nodeSelector: { [LABEL.hostname]: node },
            raidGroups: [
              { type: "mirror", blockDevices: devices.map((d) => ({ blockDeviceName: blockDeviceName(d) })) },
            ],
          },
        ],
      },
    });

    /** What a cluster does meanwhile: Metacontroller's syncs as time passes, claims bound, the kubelet's pod. */
    async function converge(what: string, done: (cspi: CSPI) => boolean | Promise<boolean>): Promise<CSPI> {
      let last: CSPI | undefined;
      let cspcStatus: unknown;
      await waitUntil(
        async () => {
          await sleep(200);
          const claims =
            (await getIfPresent(cluster, `/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims`))?.items ??
            [];
          const ours = new Set(devices.map(blockDeviceName));
          for (const claim of claims as Obj[])
            if (ours.has(claim.spec?.blockDeviceName) && claim.status?.phase !== "Bound")
              await cluster.request(
                cluster.admin,
                "PATCH",
                `/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims/${claim.metadata.name}`,
                { status: { phase: "Bound" } },
                "application/merge-patch+json",
              );
          cspcStatus = (
            await getIfPresent(
              cluster,
              `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters/${cspcName()}`,
            )
          )?.status;
          last = await theCspi();
          if (!last) return false;
          await kubelet.step(last);
          return done((last = (await theCspi())!));
        },
        WAIT_MS,
        () =>
          `${what} did not happen; the CSPI: ${JSON.stringify({ spec: last?.spec, status: last?.status })}; the CSPC's status: ${JSON.stringify(cspcStatus)}${tails()}`,
      );
      return last!;
    }

    const podAvailable = (cspi: CSPI) =>
      findCondition(cspi.status?.conditions, "PodAvailable")?.status === "True";
    const replicaFile = (cspi: string) =>
      `${sandbox.dir}/replicas/${zpoolName(cspi)}/${VOLUME}/${REPLICA_FILE}`;

    before(async () => {
      requireZfs();
      sandbox = new ZfsSandbox();
      cluster = await projectInstalled();
      network = await TestNetwork.create();
      identity = await cluster.serviceAccount(NS, "cstor-pool-node");
      const env = await shippedDaemonEnv(cluster, NS);
      const chapKey = await installedChapKey(cluster, NS);
      await ensureDefaultServiceAccount(cluster, NS);
      for (const name of [nodeA(), nodeB()]) {
        const node = await startNode(name);
        nodes.set(name, node);
        daemons.push(
          await DaemonProcess.start({
            env: env(name),
            kubeconfig: identity.kubeconfig,
            overrides: zfsFuseNodeOverrides(node, `${sandbox.dir}/replicas`),
          }),
        );
      }
      kubelet = new PoolKubelet(cluster, network, nodes, chapKey);
      devices = ["move-d1", "move-d2"].map((file) => sandbox.file(file, DEVICE_MIB));
      await apply(
        ...[nodeA(), nodeB()].map((name) => ({
          apiVersion: "v1",
          kind: "Node",
          metadata: { name, labels: { [LABEL.hostname]: name } },
        })),
        ...devices.map((path) => ndmBlockDevice(path, nodeA(), DEVICE_MIB, NS)),
      );
      if (requireReal) realMetacontrollerFromEnv();
      hooks = new HookServer(cluster);
      await hooks.start();
      metacontroller = await metacontrollerFor(cluster, hooks.process.url);
      await metacontroller.start();
    });

    after(async () => {
      await metacontroller?.stop();
      if (hooks?.process) await hooks.stop();
      await kubelet?.site?.stop();
      for (const daemon of daemons) await daemon.stop();
      await Promise.all([...nodes.values()].map((node) => node.stop()));
      await network?.close();
      sandbox?.cleanup();
    });

    it("on node A: the pool ONLINE, its pod available only once the agent sees it, and exporting the replica", async () => {
      await apply(cspc(nodeA()));
      const cspi = await converge(
        "the pool served on node A",
        (c) => c.status?.phase === "ONLINE" && podAvailable(c),
      );
      expect(cspi.status!.importedOn).to.equal(nodeA());
      const cvr: CVR = cvrObject({
        volume: VOLUME,
        cspi: cspi.metadata.name!,
        host: nodeA(),
        capacity: "16Mi",
        namespace: NS,
        cspc: cspcName(),
      });
      cvr.spec.replicaId = replicaId(VOLUME, cspi.metadata.name!);
      await apply(cvr);
      await waitUntil(
        async () =>
          (
            await getIfPresent(
              cluster,
              `/apis/${API_VERSION}/namespaces/${NS}/cstorvolumereplicas/${cvr.metadata.name}`,
            )
          )?.status?.phase === "Healthy",
        WAIT_MS,
        () => `the replica never became Healthy${tails()}`,
      );
      await kubelet.site!.exported(replicaIqn(VOLUME));
      // What makes a move hard: the pod's tgtd holds the replica open, so the pool cannot leave under it.
      const pool = zpoolName(cspi.metadata.name!);
      expect(() => nodes.get(nodeA())!.zpool("export", pool), "the served replica holds the pool").to.throw(
        /busy/,
      );
      expect(nodes.get(nodeA())!.imported(pool)).to.equal(true);
    });

    it("moves to node B with its disks: the old pod stops first, A exports, B imports, the new pod serves the same replica", async () => {
      const before = (await theCspi())!;
      const pool = zpoolName(before.metadata.name!);
      const checksum = nodes.get(nodeA())!.checksum(replicaFile(before.metadata.name!));
      const seen: (string | undefined)[] = [before.status?.importedOn];
      // The disks now show on node B (as NDM reports them after they were moved), and the CSPC follows them.
      await apply(...devices.map((path) => ndmBlockDevice(path, nodeB(), DEVICE_MIB, NS)), cspc(nodeB()));
      const moved = await converge("the pool served on node B", (c) => {
        if (seen.at(-1) !== c.status?.importedOn) seen.push(c.status?.importedOn);
        return c.status?.importedOn === nodeB() && c.status?.phase === "ONLINE" && podAvailable(c);
      });
      await kubelet.site!.exported(replicaIqn(VOLUME));

      expect(moved.metadata.name, "the same CSPI").to.equal(before.metadata.name);
      expect(moved.spec.hostName).to.equal(nodeB());
      expect(kubelet.ranOn, "one pod on A, then one on B").to.deep.equal([nodeA(), nodeB()]);
      expect(seen[0], "imported on A when the move began").to.equal(nodeA());
      expect(seen.at(-1)).to.equal(nodeB());
      expect(nodes.get(nodeA())!.imported(pool)).to.equal(false);
      expect(nodes.get(nodeB())!.imported(pool)).to.equal(true);
      expect(nodes.get(nodeB())!.checksum(replicaFile(before.metadata.name!)), "the replica's data").to.equal(
        checksum,
      );
      const rollout = findCondition(moved.status?.conditions, "RolloutPending");
      expect(rollout).to.include({ status: "False", reason: "RolledOut" });
      expect(metacontroller.errors(), `${metacontroller.description}: its errors`).to.deep.equal([]);
      expect(hooks.process.refusals(), "the hook server's refusals").to.deep.equal([]);
    });
  });
}
