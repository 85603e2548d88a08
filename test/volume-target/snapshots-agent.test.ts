// The target agent's snapshot pass (volume-target/snapshotter.ts, wired into TargetAgent.pass) against a real
// kube-apiserver with the project installed: the agent runs as the shipped cstor-volume-target ServiceAccount, so
// its RBAC and admission policies apply. md, iSCSI and LIO are the kernel's, which only user-mode Linux runs
// (test/volume-target/data-path.test.ts): here they are a kernel as the agent reads it, three legs in sync, whose
// md records each hold and release on the agent's clock. The clock is injected and moves only when the test says,
// so "released at the bound" is exact. The replicas' node daemons are played by the test through ADR 50's
// contract: a replica whose snapshot-now names a snapshot its list keeps reports it in status.snapshots; a
// reported snapshot its list no longer names is destroyed (dropped from the status).
//
// The cases run in order, one volume's snapshots over time.
import { expect } from "chai";
import type { CVR, CVSnap } from "../../api/types.js";
import { ANNOTATION, API_VERSION, FINALIZER, KIND, LABEL } from "../../api/constants.js";
import { REPLICA_DATA_LUN, replicaIqn, volumeIqn } from "../../lib/volume/iqn.js";
import { createLogger } from "../../runtime/log.js";
import { TargetAgent } from "../../volume-target/agent.js";
import { loadTargetConfig } from "../../volume-target/config.js";
import type { ArrayState, Kernel, SessionView } from "../../volume-target/kernel.js";
import { kubeTarget, type TargetKube } from "../../volume-target/kube.js";
import { createTargetMetrics, type TargetMetrics } from "../../volume-target/metrics.js";
import { HOLD_POLL_MS } from "../../volume-target/snapshotter.js";
import {
  INSTALL_NAMESPACE,
  projectInstalled,
  waitUntil,
  type Identity,
  type KubeCluster,
} from "../../testkit/kube.js";
import { ensureDefaultServiceAccount } from "../../testkit/pool-site.js";
import { ManualClock } from "../support/manual-clock.js";

const NS = INSTALL_NAMESPACE;
const VOLUME = "snap-agent";
const POOLS = ["snap-agent-pool-a", "snap-agent-pool-b", "snap-agent-pool-c"];
const REPLICAS = POOLS.map((pool) => `${VOLUME}-${pool}`);
const REPLICA_IDS = ["5a0000000000000a", "5a0000000000000b", "5a0000000000000c"];
const ADDRESSES = ["10.77.0.11", "10.77.0.12", "10.77.0.13"];
const DISKS = ["sdb", "sdc", "sdd"];
const GiB = 2 ** 30;
const MiB = 2 ** 20;
const BOUND_MS = 5000;
const T0 = Date.parse("2026-11-29T10:00:00Z");

const api = (plural: string, name = "") =>
  `/apis/${API_VERSION}/namespaces/${NS}/${plural}${name ? `/${name}` : ""}`;

/** md as the agent reads and drives it: one array of three legs in sync; each hold and release on the clock. */
class RecordingMd {
  held = false;
  readonly log: { op: "hold" | "release"; at: number }[] = [];
  /** Called as md holds: a test's hook to break something at that moment. */
  onHold: () => void = () => {};

  constructor(private readonly clock: ManualClock) {}

  kernel(iface: string): Kernel {
    const sessions: SessionView[] = ADDRESSES.map((address, i) => ({
      sid: i + 1,
      targetIqn: replicaIqn(VOLUME),
      portal: `${address}:3260`,
      iface,
      state: "LOGGED_IN",
      luns: { [REPLICA_DATA_LUN]: { disk: DISKS[i], state: "running", sizeBytes: GiB } },
    }));
    const array: ArrayState = {
      kernelName: "md127",
      uuid: "5a5a5a5a-0000-4000-8000-000000000001",
      arrayState: "clean",
      raidDisks: 3,
      degraded: 0,
      syncAction: "idle",
      sizeBytes: GiB - MiB,
      legs: DISKS.map((disk, slot) => ({ disk, slot, states: ["in_sync"], dataOffsetBytes: MiB })),
      stat: { reads: 0, readSectors: 0, readMs: 0, writes: 0, writeSectors: 0, writeMs: 0, inFlight: 0 },
    };
    const unexpected = (what: string) => () => Promise.reject(new Error(`${what}: not expected here`));
    return {
      legs: {
        ensureIface: async () => {},
        login: unexpected("login"),
        logout: unexpected("logout"),
        sessions: async () => sessions,
        rescan: unexpected("rescan"),
      },
      arrays: {
        examine: unexpected("examine"),
        create: unexpected("create"),
        assemble: unexpected("assemble"),
        assembleWithNewUuid: unexpected("assembleWithNewUuid"),
        find: async () => array.kernelName,
        state: async () => array,
        add: unexpected("add"),
        reAdd: unexpected("reAdd"),
        remove: unexpected("remove"),
        grow: unexpected("grow"),
        growSize: unexpected("growSize"),
        stop: unexpected("stop"),
        holdWrites: async () => {
          this.held = true;
          this.log.push({ op: "hold", at: this.clock.now() });
          this.onHold();
        },
        releaseWrites: async () => {
          this.held = false;
          this.log.push({ op: "release", at: this.clock.now() });
        },
        writesHeld: async () => this.held,
      },
      exports: {
        read: async () => undefined,
        ensure: async () => {},
        setWriteProtect: async () => {},
        remove: async () => {},
      },
    };
  }
}

describe("volume target: the snapshot pass against a real kube-apiserver", function () {
  this.timeout(5 * 60_000);
  let cluster: KubeCluster;
  let identity: Identity;
  const clock = new ManualClock(T0);
  const config = loadTargetConfig({
    OPENEBS_IO_CSTOR_VOLUME: VOLUME,
    NAMESPACE: NS,
    NODE_NAME: "node-t",
    POD_IP: "10.77.0.2",
    CHAP_USERNAME: VOLUME,
    CHAP_PASSWORD: "0123456789abcdef0123456789abcdef",
    SNAPSHOT_HOLD_SECONDS: String(BOUND_MS / 1000),
  });

  const admin = async (method: string, path: string, body?: unknown, type?: string) => {
    const response = await cluster.request(cluster.admin, method, path, body, type);
    if (response.status >= 300)
      throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body;
  };
  const replicas = async () => (await admin("GET", api("cstorvolumereplicas"))).items as CVR[];
  const ours = async () => (await replicas()).filter((r) => REPLICAS.includes(r.metadata.name!));
  const snapshot = async (name: string) => (await admin("GET", api("cstorvolumesnapshots", name))) as CVSnap;
  const annotation = (r: CVR, key: string) => r.metadata.annotations?.[key];

  /** A CStorVolumeSnapshot as the CSI controller creates it: labelled with its volume, with the finalizer. */
  const createSnapshot = (name: string, labels: Record<string, string> = { [LABEL.replicaVolume]: VOLUME }) =>
    admin("POST", api("cstorvolumesnapshots"), {
      apiVersion: API_VERSION,
      kind: KIND.cvsnap,
      metadata: { name, labels, finalizers: [FINALIZER.replicaSnapshots] },
      spec: { volume: VOLUME },
    });

  /**
   * The pools' node daemons, once: each replica (but the silent) takes the snapshot its snapshot-now names when
   * its list keeps it, and destroys what its list no longer names; nothing when it has no list.
   */
  const playPools = async (silent: string[] = []) => {
    for (const replica of await ours()) {
      const name = replica.metadata.name!;
      const text = annotation(replica, ANNOTATION.replicaSnapshots);
      if (silent.includes(name) || text === undefined) continue;
      const listed = text.split(",").filter(Boolean);
      const asked = annotation(replica, ANNOTATION.snapshotNow);
      const before = replica.status?.snapshots ?? [];
      let after = before.filter((s) => listed.includes(s.name));
      if (asked && listed.includes(asked) && !after.some((s) => s.name === asked))
        after = [...after, { name: asked, creationTime: new Date().toISOString().replace(/\.\d+Z$/, "Z") }];
      if (JSON.stringify(after) !== JSON.stringify(before))
        await admin(
          "PATCH",
          api("cstorvolumereplicas", `${name}/status`),
          { status: { snapshots: after } },
          "application/merge-patch+json",
        );
    }
  };

  const until = (what: string, check: () => Promise<boolean>) =>
    waitUntil(check, 60_000, () => `never: ${what}`);
  /** Until the agent's hold loop sleeps for its next read of the replicas. */
  /** A pass that must end without the clock moving (no hold): one that waits for it fails the test, saying so. */
  const finished = async (pass: Promise<void>, md: RecordingMd) => {
    let done = false;
    void pass.finally(() => (done = true));
    await until(`the pass ends by itself (md: ${JSON.stringify(md.log)})`, async () => done);
    await pass;
  };
  const untilPolling = () =>
    until("the hold loop waits for its next poll", async () => clock.sleepsUntil(clock.now() + HOLD_POLL_MS));
  const allAsked = (name: string) =>
    until(`every replica asked for ${name}`, async () =>
      (await ours()).every((r) => annotation(r, ANNOTATION.snapshotNow) === name),
    );

  const agentWith = (md: RecordingMd, kube?: (real: TargetKube) => TargetKube) => {
    const real = kubeTarget(cluster.kubeConfig(identity), NS, VOLUME);
    const metrics = createTargetMetrics(VOLUME, NS);
    const agent = new TargetAgent({
      config,
      kernel: md.kernel(config.names.iface),
      kube: kube ? kube(real) : real,
      metrics,
      logger: createLogger({ level: "silent" }),
      clock,
    });
    return { agent, metrics };
  };
  const sample = async (metrics: TargetMetrics, name: string, labels: Record<string, string> = {}) => {
    const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
    return (metric?.values as { value: number; labels: Record<string, unknown> }[] | undefined)?.find((v) =>
      Object.entries(labels).every(([key, value]) => v.labels[key] === value),
    )?.value;
  };

  before(async () => {
    cluster = await projectInstalled();
    identity = await cluster.serviceAccount(NS, "cstor-volume-target");
    await ensureDefaultServiceAccount(cluster, NS);
    await admin("POST", api("cstorvolumes"), {
      apiVersion: API_VERSION,
      kind: KIND.cv,
      metadata: { name: VOLUME, labels: { [LABEL.persistentVolume]: VOLUME } },
      spec: {
        capacity: "1Gi",
        targetIP: "10.96.0.77",
        targetPort: "3260",
        targetPortal: "10.96.0.77:3260",
        iqn: volumeIqn(VOLUME),
        replicationFactor: 3,
        consistencyFactor: 2,
        desiredReplicationFactor: 3,
        replicaDetails: { knownReplicas: Object.fromEntries(REPLICA_IDS.map((id, i) => [id, POOLS[i]])) },
      },
    });
    for (const [i, pool] of POOLS.entries()) {
      await admin("POST", api("cstorvolumereplicas"), {
        apiVersion: API_VERSION,
        kind: KIND.cvr,
        metadata: {
          name: REPLICAS[i],
          labels: { [LABEL.replicaVolume]: VOLUME, [LABEL.replicaPool]: pool },
          finalizers: [FINALIZER.replicaProtection],
        },
        spec: { capacity: "1Gi", replicaId: REPLICA_IDS[i] },
      });
      // The pool pod, as its kubelet reports it: where the target finds the replica's export.
      const pod = `${pool}-pod`;
      await admin("POST", `/api/v1/namespaces/${NS}/pods`, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: pod, labels: { [LABEL.app]: "cstor-pool", [LABEL.cspi]: pool } },
        spec: { nodeName: `node-${i}`, containers: [{ name: "pool", image: "cstor-pool:test" }] },
      });
      await admin(
        "PATCH",
        `/api/v1/namespaces/${NS}/pods/${pod}/status`,
        { status: { phase: "Running", podIP: ADDRESSES[i], podIPs: [{ ip: ADDRESSES[i] }] } },
        "application/merge-patch+json",
      );
    }
  });

  it("holds the writes, asks every replica, and releases once all three pools confirmed: ReadyToUse, the hold measured", async () => {
    const md = new RecordingMd(clock);
    const { agent, metrics } = agentWith(md);
    await createSnapshot("snap-1");
    await createSnapshot("snap-unlabelled", {});
    const since = clock.now();
    const pass = agent.pass();
    await allAsked("snap-1");
    expect(md.held, "md holds the writes while the pools snapshot").to.equal(true);
    await until("the snapshot Holding", async () => (await snapshot("snap-1")).status?.phase === "Holding");
    await playPools();
    await untilPolling();
    clock.advance(HOLD_POLL_MS);
    await pass;

    expect(md.log).to.deep.equal([
      { op: "hold", at: since },
      { op: "release", at: since + HOLD_POLL_MS },
    ]);
    expect((await snapshot("snap-1")).status).to.deep.equal({
      phase: "ReadyToUse",
      creationTime: new Date(since).toISOString(),
      holdMilliseconds: HOLD_POLL_MS,
      restoreSize: "1Gi",
      replicas: REPLICAS,
      attempts: 1,
      observedGeneration: 1,
    });
    for (const replica of await ours()) {
      expect(annotation(replica, ANNOTATION.snapshotNow), "snapshot-now removed after").to.equal(undefined);
      expect(annotation(replica, ANNOTATION.replicaSnapshots)).to.equal("snap-1");
    }
    expect(await sample(metrics, "cstor_volume_target_snapshot_hold_seconds")).to.equal(HOLD_POLL_MS / 1000);
    expect(await sample(metrics, "cstor_volume_target_snapshots_total", { result: "ReadyToUse" })).to.equal(
      1,
    );
    expect(
      (await snapshot("snap-unlabelled")).status,
      "a snapshot without the volume label is not the target's",
    ).to.equal(undefined);
    await admin("DELETE", api("cstorvolumesnapshots", "snap-unlabelled"));
    await admin(
      "PATCH",
      api("cstorvolumesnapshots", "snap-unlabelled"),
      { metadata: { finalizers: null } },
      "application/merge-patch+json",
    );
  });

  it("releases at the bound when a pool does not answer, fails naming its replica, and tries again after the back-off", async () => {
    const md = new RecordingMd(clock);
    const { agent, metrics } = agentWith(md);
    await createSnapshot("snap-2");
    const since = clock.now();
    let pass = agent.pass();
    await allAsked("snap-2");
    await playPools([REPLICAS[2]]);
    await untilPolling();
    clock.advance(HOLD_POLL_MS);
    await untilPolling();
    clock.advance(since + BOUND_MS - clock.now());
    await pass;

    expect(md.log).to.deep.equal([
      { op: "hold", at: since },
      { op: "release", at: since + BOUND_MS },
    ]);
    const failed = (await snapshot("snap-2")).status!;
    expect(failed).to.deep.include({
      phase: "Failed",
      attempts: 1,
      holdMilliseconds: BOUND_MS,
      nextAttemptTime: new Date(since + BOUND_MS + 10_000).toISOString(),
    });
    expect(failed.reason).to.equal(
      `replica(s) ${REPLICAS[2]} did not confirm snapshot snap-2 within 5 s of holding the writes: their pools' node daemons did not report it in status.snapshots`,
    );
    for (const replica of await ours()) {
      expect(annotation(replica, ANNOTATION.snapshotNow)).to.equal(undefined);
      expect(annotation(replica, ANNOTATION.replicaSnapshots), "the attempt's name dropped").to.equal(
        "snap-1",
      );
    }
    expect(await sample(metrics, "cstor_volume_target_snapshot_hold_seconds")).to.equal(BOUND_MS / 1000);
    expect(await sample(metrics, "cstor_volume_target_snapshots_total", { result: "Failed" })).to.equal(1);

    // The pools that took it destroy it; before the back-off nothing is held.
    await playPools();
    expect((await ours()).map((r) => (r.status?.snapshots ?? []).map((s) => s.name))).to.deep.equal([
      ["snap-1"],
      ["snap-1"],
      ["snap-1"],
    ]);
    await finished(agent.pass(), md);
    expect(md.log, "no hold before the next attempt's time").to.have.length(2);

    clock.advance(10_000);
    const retried = clock.now();
    pass = agent.pass();
    await allAsked("snap-2");
    await playPools();
    await untilPolling();
    clock.advance(HOLD_POLL_MS);
    await pass;
    expect(md.log.slice(2)).to.deep.equal([
      { op: "hold", at: retried },
      { op: "release", at: retried + HOLD_POLL_MS },
    ]);
    expect((await snapshot("snap-2")).status).to.deep.include({
      phase: "ReadyToUse",
      attempts: 2,
      creationTime: new Date(retried).toISOString(),
    });
  });

  it("releases at the bound while the apiserver does not answer the hold's calls", async () => {
    const md = new RecordingMd(clock);
    let hanging = false;
    const never = new Promise<never>(() => {});
    const { agent } = agentWith(md, (real) => ({
      ...real,
      replicas: () => (hanging ? never : real.replicas()),
      annotateReplica: (replica, annotations) =>
        hanging ? never : real.annotateReplica(replica, annotations),
    }));
    md.onHold = () => {
      hanging = true;
    };
    await createSnapshot("snap-3");
    const since = clock.now();
    const pass = agent.pass();
    await until("md holds", async () => md.held);
    clock.advance(BOUND_MS);
    await until("md releases at the bound, the replicas' calls still unanswered", async () => !md.held);
    await pass;
    expect(md.log).to.deep.equal([
      { op: "hold", at: since },
      { op: "release", at: since + BOUND_MS },
    ]);
    expect((await snapshot("snap-3")).status).to.deep.include({ phase: "Failed", attempts: 1 });
    expect((await snapshot("snap-3")).status?.reason).to.match(
      new RegExp(`^replica\\(s\\) ${REPLICAS.join(", ")} did not confirm snapshot snap-3 within 5 s`),
    );
  });

  it("a target that restarts while md holds the writes releases them in its first pass, and fails the snapshot it was taking", async () => {
    const md = new RecordingMd(clock);
    md.held = true;
    const { agent } = agentWith(md);
    await createSnapshot("snap-4");
    await admin(
      "PATCH",
      api("cstorvolumesnapshots", "snap-4/status"),
      { status: { phase: "Holding", creationTime: new Date(clock.now()).toISOString(), attempts: 1 } },
      "application/merge-patch+json",
    );
    const [first] = await ours();
    await admin(
      "PATCH",
      api("cstorvolumereplicas", first.metadata.name),
      { metadata: { annotations: { [ANNOTATION.snapshotNow]: "snap-4" } } },
      "application/merge-patch+json",
    );
    clock.advance(30_000);
    const restarted = clock.now();
    await finished(agent.pass(), md);
    expect(md.log).to.deep.equal([{ op: "release", at: restarted }]);
    expect((await snapshot("snap-4")).status).to.deep.include({
      phase: "Failed",
      attempts: 1,
      reason:
        "the hold ended before its outcome was written (the target restarted during it, or its status write failed)",
    });
    expect(annotation((await ours())[0], ANNOTATION.snapshotNow)).to.equal(undefined);
  });

  it("releases a hold it finds while the apiserver refuses to list snapshots", async () => {
    const md = new RecordingMd(clock);
    md.held = true;
    const { agent } = agentWith(md, (real) => ({
      ...real,
      snapshots: () => Promise.reject(new Error("the apiserver is unavailable")),
    }));
    await finished(agent.pass(), md);
    expect(md.log).to.deep.equal([{ op: "release", at: clock.now() }]);
  });

  it("a deleted snapshot leaves every replica's list, and its finalizer goes once no pool reports it", async () => {
    const md = new RecordingMd(clock);
    const { agent } = agentWith(md);
    const gone = async (name: string) =>
      (await cluster.request(cluster.admin, "GET", api("cstorvolumesnapshots", name))).status === 404;
    for (const name of ["snap-1", "snap-3", "snap-4"])
      await admin("DELETE", api("cstorvolumesnapshots", name));
    await finished(agent.pass(), md);
    for (const replica of await ours())
      expect(annotation(replica, ANNOTATION.replicaSnapshots)).to.equal("snap-2");
    expect((await snapshot("snap-1")).metadata.finalizers, "the pools still hold it").to.deep.equal([
      FINALIZER.replicaSnapshots,
    ]);
    expect(await gone("snap-3"), "failed attempts left nothing on the pools: gone at once").to.equal(true);
    expect(await gone("snap-4")).to.equal(true);
    await playPools();
    await finished(agent.pass(), md);
    expect(await gone("snap-1")).to.equal(true);
    expect(md.log, "deletion holds nothing").to.deep.equal([]);
  });
});
