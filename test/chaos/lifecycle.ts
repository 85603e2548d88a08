// One chaos run: the CSPC lifecycle of the end-to-end suites on a real apiserver with three simulated nodes,
// driven through the CSPC and a CStorVolumeConfig as a user drives them (provision with data, expand, replace a
// disk, create a volume with data in its replicas, grow it, add a pool, remove the pool holding a replica so the
// replica moves, migrate the other pool, delete the volume, delete the CSPC), while FaultScheduler kills and
// restarts parts. Each step ends when the cluster and the nodes' pools have converged to the spec, within a
// bound; the time it took is the step's convergence time. Then the invariants: data, claims, replicas, devices,
// finalizers, forced commands.
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { ANNOTATION, API_VERSION, KIND, LABEL } from "../../api/constants.js";
import type { CSPI } from "../../api/types.js";
import { claimName, zpoolName } from "../../lib/names.js";
import { parseQuantity } from "../../lib/quantity.js";
import { rebuildingSince } from "../../lib/volume/health.js";
import { leaves, parseZpoolStatus } from "../../zfs/parse.js";
import { keepPlayingNdmAndKubelet, type ApiResponse, type OwnCluster } from "../../testkit/kube.js";
import { shippedDaemonEnv } from "../../testkit/node-daemon-process.js";
import { onStop } from "../../testkit/processes.js";
import { startNode } from "../../testkit/zfs-node.js";
import { blockDeviceName, MiB, ndmBlockDevice, nodeObject, ZfsSandbox } from "../../testkit/zfs.js";
import { FaultScheduler, lifecyclePlanner, type FaultOptions } from "./faults.js";
import { InvariantMonitor, type Violation } from "./invariants.js";
import { HookServer, metacontrollerFor, NS, type Metacontroller } from "../../testkit/control-plane.js";
import { ChaosNode, commandLogDir } from "./parts.js";
import { Prng } from "./prng.js";
import { retrying } from "./retrying.js";

const DEVICE_MIB = 64;
/** The volume's replicas: on pools A and B, then, once B is removed, on A and C. */
const REPLICAS = 2;
type LifecycleStep =
  | "provision"
  | "expand"
  | "replace"
  | "volume-create"
  | "volume-resize"
  | "add-pool"
  | "remove-pool"
  | "migrate"
  | "volume-delete"
  | "delete";
type Step = LifecycleStep | "setup" | "checks";

/** The bound a step must converge within unless told otherwise. */
export const DEFAULT_BOUND_MS = 420_000;

export interface RunOptions {
  seed: number;
  /** The bound each step must converge within. */
  boundMs: number;
  faults: FaultOptions;
  /** Where a failed run's logs are written. */
  logDir: string;
  say: (line: string) => void;
}

export interface RunReport {
  scenario: "lifecycle";
  seed: number;
  passed: boolean;
  failure?: { step: string; message: string };
  /** Seconds each step took to converge. */
  convergence: Partial<Record<LifecycleStep, number>>;
  faults: Record<string, number>;
  faultsInjected: number;
  violations: Violation[];
  checksumsVerified: number;
  releasesChecked: number;
  replicaReleasesChecked: number;
  commandsLogged: number;
  seconds: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cspcPath = (name = "") =>
  `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters${name ? `/${name}` : ""}`;
const list = (resource: string, selector: string) =>
  `/apis/${API_VERSION}/namespaces/${NS}/${resource}?labelSelector=${encodeURIComponent(selector)}`;
/** zpool/zfs subcommands where -f forces past a safety check; `labelclear -f` is the only form labelclear has. */
const FORCEABLE =
  /^(zpool (create|add|import|export|destroy|replace|attach|detach|offline|online)|zfs (destroy|rollback|receive|unmount|umount))$/;

class StepFailure extends Error {
  override readonly name = "StepFailure";
}

export async function chaosRun(cluster: OwnCluster, options: RunOptions): Promise<RunReport> {
  const { seed, say } = options;
  const startedAt = Date.now();
  const elapsed = () => ((Date.now() - startedAt) / 1000).toFixed(1);
  const log = (line: string) => say(`[seed ${seed} +${elapsed()}s] ${line}`);
  let step: Step = "setup";
  const report: RunReport = {
    scenario: "lifecycle",
    seed,
    passed: false,
    convergence: {},
    faults: {},
    faultsInjected: 0,
    violations: [],
    checksumsVerified: 0,
    releasesChecked: 0,
    replicaReleasesChecked: 0,
    commandsLogged: 0,
    seconds: 0,
  };

  const sandbox = new ZfsSandbox();
  // An interrupted run (Ctrl-C) skips the finally below: its device files go with the other parts.
  onStop(async () => sandbox.cleanup());
  const cspc = `chaos-${sandbox.id}`;
  const volume = `chaos-vol-${sandbox.id}`;
  const nodeName = (key: string) => `chaos-${key.toLowerCase()}-${sandbox.id}`;
  // Named by the run: a disk of an earlier run (moved to another node by its migrate step) is not this run's.
  const files = Object.fromEntries(
    ["a1", "a2", "a3", "a4", "a5", "b1", "b2", "c1", "c2"].map((d) => [
      d,
      sandbox.file(`chaos-${sandbox.id}-${d}`, DEVICE_MIB),
    ]),
  );
  const bd = (d: string) => blockDeviceName(files[d]);
  const paths = new Map(Object.values(files).map((path) => [blockDeviceName(path), path]));

  const api = (method: string, path: string, body?: unknown, contentType?: string): Promise<ApiResponse> =>
    retrying(
      `${method} ${path}`,
      async () => {
        const response = await cluster.request(cluster.admin, method, path, body, contentType);
        if (response.status >= 500 || response.status === 429)
          throw new Error(`${response.status} ${JSON.stringify(response.body).slice(0, 300)}`);
        return response;
      },
      options.boundMs,
    );
  const items = async (path: string): Promise<any[]> => (await api("GET", path)).body.items ?? [];
  const cspis = (): Promise<CSPI[]> => items(list("cstorpoolinstances", `${LABEL.cspc}=${cspc}`));
  const claims = () => items(list("blockdeviceclaims", `${LABEL.cspc}=${cspc}`));

  const nodes: ChaosNode[] = [];
  const hooks = new HookServer(cluster);
  let metacontroller: Metacontroller | undefined;
  let scheduler: FaultScheduler | undefined;
  let monitor: InvariantMonitor | undefined;
  let helper: { stop(): Promise<void> } | undefined;
  /** Pools (by CSPI) holding data whose checksum is owed until the pool is deliberately destroyed. */
  const data: { cspi: string; file: string; sha: string; live: boolean }[] = [];
  /** CSPI names of the pools first made on node A, B and C. */
  const pool: { A?: string; B?: string; C?: string } = {};
  /** Device files of pools set to failmode=continue: one may disappear under them without hanging zfs-fuse. */
  let removableNow: string[] = [];

  const nodeOf = (name: string | undefined) => nodes.find((n) => n.name === name);
  const cspiOf = async (name: string) => {
    const response = await api("GET", `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances/${name}`);
    return response.status === 200 ? (response.body as CSPI) : undefined;
  };

  /** What stops the CSPI's pool from matching its spec on its node, or undefined when it does. */
  const poolMismatch = async (cspi: CSPI): Promise<string | undefined> => {
    const name = cspi.metadata.name!;
    if (cspi.status?.phase !== "ONLINE") return `CSPI ${name} phase ${cspi.status?.phase}`;
    if (cspi.status.importedOn !== cspi.spec.hostName)
      return `CSPI ${name} importedOn ${cspi.status.importedOn}, spec.hostName ${cspi.spec.hostName}`;
    const home = nodeOf(cspi.spec.hostName);
    for (const node of nodes) {
      const text = await node.zpoolStatus();
      if (text === undefined) return `node ${node.key}'s zpool does not answer`;
      const status = parseZpoolStatus(text).find((p) => p.name === zpoolName(name));
      if (node !== home) {
        if (status) return `pool ${zpoolName(name)} imported on node ${node.key}, not its node`;
        continue;
      }
      if (!status) return `pool ${zpoolName(name)} not imported on node ${node.key}`;
      if (status.state !== "ONLINE") return `pool ${zpoolName(name)} is ${status.state}`;
      const groups = status.layout.data.map((vdev) => leaves([vdev]).map((leaf) => leaf.device ?? leaf.name));
      const wanted = cspi.spec.raidGroups.map((g) => g.blockDevices.map((d) => d.devLink));
      if (JSON.stringify(groups) !== JSON.stringify(wanted))
        return `pool ${zpoolName(name)} has ${JSON.stringify(groups)}, spec ${JSON.stringify(wanted)}`;
    }
    return undefined;
  };

  /** Polls until `mismatch` answers undefined; the step's convergence time, or a failure after the bound. */
  const converge = async (
    name: LifecycleStep,
    since: number,
    mismatch: () => Promise<string | undefined>,
  ): Promise<void> => {
    let last: string | undefined;
    let said = Date.now();
    while (
      (last = await mismatch().catch((error: Error) => `check failed: ${error.message}`)) !== undefined
    ) {
      if (Date.now() - since > options.boundMs)
        throw new StepFailure(`did not converge within ${options.boundMs / 1000} s: ${last}`);
      // A slow step says, once a minute, what it still waits for.
      if (Date.now() - said > 60_000) {
        said = Date.now();
        log(`${name}: waiting ${Math.round((said - since) / 1000)} s: ${last}`);
      }
      await sleep(1000);
    }
    report.convergence[name] = Math.round((Date.now() - since) / 100) / 10;
    log(`${name}: converged in ${report.convergence[name]} s`);
  };

  /** Every checksum owed is read back from the node that has the pool; `retire` ends the debt of one pool and deletes its data. */
  const verifyData = async (retire?: string): Promise<void> => {
    for (const entry of data.filter((d) => d.live)) {
      const cspi = await cspiOf(entry.cspi);
      const node = nodeOf(cspi?.status?.importedOn);
      if (!node)
        throw new StepFailure(
          `data of ${entry.cspi}: its pool is imported nowhere (CSPI ${cspi ? `importedOn ${cspi.status?.importedOn}` : "gone"})`,
        );
      const sha = await node.whenRunning(() => node.zfs.checksum(entry.file));
      report.checksumsVerified += 1;
      if (sha !== entry.sha)
        throw new StepFailure(
          `data of ${entry.cspi}: ${entry.file} reads back with sha256 ${sha}, written ${entry.sha}`,
        );
      if (entry.cspi !== retire) continue;
      // As a user deletes the volumes before removing their pool: the daemon refuses to destroy a pool holding any.
      const dataset = `${zpoolName(entry.cspi)}/vol1`;
      await retrying(
        `deleting ${dataset}`,
        () =>
          node.whenRunning(() => {
            // zfs-fuse calls a dataset just read from busy for a moment: unmount first, again until it lets go.
            if (node.zfs.zfs("get", "-H", "-o", "value", "mounted", dataset).trim() === "yes")
              node.zfs.zfs("unmount", dataset);
            node.zfs.zfs("destroy", "-r", dataset);
          }),
        60_000,
      );
      entry.live = false;
    }
  };

  /** Where the node daemons keep the file backend's replicas (zfs-fuse has no zvols), inside each node. */
  const replicaDir = join(sandbox.dir, "replicas");
  const volumeData = randomBytes(MiB);
  /** Set once the volume's data is in its replicas, until the volume is deleted: then every serving replica owes it. */
  let volumeWritten = false;
  const volumePath = (resource: string, name = volume) =>
    `/apis/${API_VERSION}/namespaces/${NS}/${resource}/${name}`;
  const replicasOfVolume = () => items(list("cstorvolumereplicas", `${LABEL.replicaVolume}=${volume}`));
  const replicaFile = (cspi: string) => join(replicaDir, zpoolName(cspi), volume, "replica.img");
  const cvcObject = (capacity: string) => ({
    apiVersion: API_VERSION,
    kind: KIND.cvc,
    metadata: { name: volume, namespace: NS },
    spec: { capacity, cstorPoolCluster: cspc, replicaCount: REPLICAS },
  });
  const applyCvc = (capacity: string) =>
    retrying(
      `applying CStorVolumeConfig ${volume} (capacity ${capacity})`,
      () =>
        cluster.kubectl(["apply", "--server-side", "-f", "-"], {
          input: JSON.stringify(cvcObject(capacity)),
        }),
      options.boundMs,
    );
  /** The node that has the CSPI's pool imported now. */
  const holderOf = async (cspi: string): Promise<ChaosNode> => {
    const node = nodeOf((await cspiOf(cspi))?.status?.importedOn);
    if (!node) throw new StepFailure(`replica of ${volume} on ${cspi}: its pool is imported nowhere`);
    return node;
  };
  /** The pool's replica of the volume: its size and sha256 as the node that has the pool reads it. */
  const readReplica = async (cspi: string): Promise<{ size: number; sha: string }> => {
    const node = await holderOf(cspi);
    return node.whenRunning(() => ({
      size: Number(node.zfs.run(["stat", "-c", "%s", replicaFile(cspi)]).trim()),
      sha: node.zfs.checksum(replicaFile(cspi)),
    }));
  };
  /** The volume's data written at the start of the replica's file, as the target writes to (or rebuilds) every replica. */
  const writeReplica = async (cspi: string): Promise<void> => {
    const node = await holderOf(cspi);
    await node.whenRunning(() =>
      node.zfs.run(["dd", `of=${replicaFile(cspi)}`, "bs=1M", "conv=notrunc", "status=none"], volumeData),
    );
  };

  /** What keeps the volume from its spec: one replica on each of `pools`, each Healthy at `capacity` with a file of that size, none rebuilding or going, the change settled, the CStorVolume Healthy. */
  const volumeMismatch = async (pools: string[], capacity: string): Promise<string | undefined> => {
    const cvc = await api("GET", volumePath("cstorvolumeconfigs"));
    if (cvc.status !== 200) return `CVC ${volume}: ${cvc.status}`;
    const status = cvc.body.status ?? {};
    const change = (status.conditions ?? []).find((c: { type: string }) => c.type === "ReplicaChange");
    if (status.phase !== "Bound" || change?.reason !== "Settled")
      return `CVC ${volume} ${status.phase}, ReplicaChange ${change?.reason}: ${change?.message ?? status.reason}`;
    const replicas = await replicasOfVolume();
    const on = replicas.map((r) => r.metadata.labels[LABEL.replicaPool]).sort();
    if (JSON.stringify(on) !== JSON.stringify([...pools].sort()))
      return `replicas of ${volume} on ${JSON.stringify(on)}, wanted ${JSON.stringify([...pools].sort())}`;
    // In the order a change travels: CVR spec (cvc-sync), the file and the CVR status (node daemon), the CVC status (cvc-sync again).
    for (const r of replicas) {
      const name = r.metadata.name;
      if (r.metadata.deletionTimestamp) return `CVR ${name} is being deleted`;
      if (r.spec.capacity !== capacity)
        return `CVR ${name} spec.capacity ${r.spec.capacity}, the CVC's ${capacity}`;
      const { size } = await readReplica(r.metadata.labels[LABEL.replicaPool]);
      if (size !== Number(parseQuantity(capacity)!.nano / 10n ** 9n))
        return `replica file of ${name} is ${size} bytes, capacity ${capacity}`;
      if (r.status?.phase !== "Healthy" || r.status.capacity?.total !== capacity)
        return `CVR ${name} ${r.status?.phase} (${r.status?.reason ?? ""}) at ${r.status?.capacity?.total}`;
      if (rebuildingSince(r) !== undefined) return `CVR ${name} is rebuilding`;
    }
    if (status.capacity !== capacity)
      return `CVC ${volume} status.capacity ${status.capacity} though every replica reports ${capacity}`;
    const cv = await api("GET", volumePath("cstorvolumes"));
    if (cv.body.spec?.capacity !== capacity || cv.body.status?.phase !== "Healthy")
      return `CV ${volume}: spec.capacity ${cv.body.spec?.capacity}, phase ${cv.body.status?.phase}`;
    return undefined;
  };

  /** Every serving replica of the volume (not going, not rebuilding) reads back as the volume's data then zeros, to its size. */
  const verifyVolume = async (): Promise<void> => {
    if (!volumeWritten) return;
    let serving = 0;
    for (const r of await replicasOfVolume()) {
      if (r.metadata.deletionTimestamp || rebuildingSince(r) !== undefined) continue;
      const cspi = r.metadata.labels[LABEL.replicaPool];
      const { size, sha } = await readReplica(cspi);
      const expected = createHash("sha256")
        .update(volumeData)
        .update(Buffer.alloc(Math.max(0, size - MiB)))
        .digest("hex");
      report.checksumsVerified += 1;
      if (sha !== expected)
        throw new StepFailure(
          `replica ${r.metadata.name} of ${volume} on ${cspi}: ${replicaFile(cspi)} (${size} bytes) reads back with sha256 ${sha}, the volume's data gives ${expected}`,
        );
      serving += 1;
    }
    if (serving < REPLICAS)
      throw new StepFailure(`volume ${volume}: ${serving} replicas serve its data, ${REPLICAS} wanted`);
  };

  const editCspc = (what: string, change: (spec: any) => void) =>
    retrying(
      `editing CSPC ${cspc} (${what})`,
      async () => {
        const current = (await api("GET", cspcPath(cspc))).body;
        change(current.spec);
        const response = await api(
          "PATCH",
          cspcPath(cspc),
          { spec: current.spec },
          "application/merge-patch+json",
        );
        if (response.status !== 200)
          throw new StepFailure(
            `${what}: the CSPC edit was refused: ${response.status} ${JSON.stringify(response.body).slice(0, 500)}`,
          );
      },
      options.boundMs,
    );

  /**
   * The target's part (there is no target here), played after NDM's and the kubelet's every second: a replica
   * added to the volume is rebuilt from the others (the volume's data written into it) once its node daemon made
   * it, then confirmed caught up (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md).
   */
  const playTarget = async () => {
    for (const r of await replicasOfVolume()) {
      const annotations = r.metadata.annotations ?? {};
      if (
        r.metadata.deletionTimestamp ||
        !annotations[ANNOTATION.rebuildingSince] ||
        annotations[ANNOTATION.replicaCaughtUp] === "true" ||
        r.status?.phase !== "Healthy"
      )
        continue;
      await writeReplica(r.metadata.labels[LABEL.replicaPool]);
      await cluster.request(
        cluster.admin,
        "PATCH",
        volumePath("cstorvolumereplicas", r.metadata.name),
        { metadata: { annotations: { [ANNOTATION.replicaCaughtUp]: "true" } } },
        "application/merge-patch+json",
      );
    }
  };

  try {
    const identity = await cluster.serviceAccount(NS, "cstor-pool-node");
    const env = await shippedDaemonEnv(cluster, NS);
    for (const key of ["A", "B", "C"]) {
      const zfs = await startNode(nodeName(key));
      // zfs-fuse has no zvols: the daemons run the file backend, configured as an operator would.
      const daemonEnv = {
        ...env(nodeName(key)),
        CSTOR_REPLICA_BACKEND: "file",
        CSTOR_REPLICA_FILE_DIR: replicaDir,
      };
      const node = new ChaosNode(
        key,
        nodeName(key),
        zfs,
        commandLogDir(sandbox.dir, key),
        daemonEnv,
        identity,
      );
      nodes.push(node);
      await node.startDaemon();
    }
    await hooks.start();
    metacontroller = await metacontrollerFor(cluster, hooks.process.url);
    log(`Metacontroller: ${metacontroller.description}`);
    await metacontroller.start();
    helper = keepPlayingNdmAndKubelet(cluster, NS, cspc, 1000, playTarget);
    monitor = new InvariantMonitor(cluster, cspc, volume, nodes, paths, () => step, startedAt);
    monitor.start();
    // A device file may disappear only under a pool set to failmode=continue, and not while a pool is imported.
    const removable = () => (step === "expand" || step === "replace" ? removableNow : []);
    scheduler = new FaultScheduler(
      new Prng(seed),
      lifecyclePlanner(
        { cluster, nodes, hooks, metacontroller, removableDevices: removable },
        options.faults,
      ),
      options.faults,
      () => step,
      startedAt,
      log,
    );
    scheduler.start();

    // provision: two pools, one per node, each a mirror; then data in each.
    step = "provision";
    let since = Date.now();
    const objects = [
      ...nodes.map((n) => nodeObject(n.name)),
      ...Object.entries(files).map(([key, path]) => ndmBlockDevice(path, nodeName(key[0]), DEVICE_MIB, NS)),
      {
        apiVersion: API_VERSION,
        kind: KIND.cspc,
        metadata: { name: cspc, namespace: NS },
        spec: {
          pools: ["A", "B"].map((key) => ({
            nodeSelector: { [LABEL.hostname]: nodeName(key) },
            raidGroups: [
              {
                type: "mirror",
                blockDevices: (key === "A" ? ["a1", "a2"] : ["b1", "b2"]).map((d) => ({
                  blockDeviceName: bd(d),
                })),
              },
            ],
          })),
        },
      },
    ];
    await retrying(
      "applying the CSPC, Nodes and BlockDevices",
      () =>
        cluster.kubectl(["apply", "--server-side", "-f", "-"], {
          input: objects.map((o) => JSON.stringify(o)).join("\n"),
        }),
      options.boundMs,
    );
    await converge("provision", since, async () => {
      const all = await cspis();
      if (all.length !== 2) return `${all.length} CSPIs`;
      for (const cspi of all) {
        const mismatch = await poolMismatch(cspi);
        if (mismatch) return mismatch;
      }
      for (const cspi of all) pool[cspi.spec.hostName === nodeName("A") ? "A" : "B"] = cspi.metadata.name!;
      return undefined;
    });
    for (const key of ["A", "B"] as const) {
      const node = nodes.find((n) => n.key === key)!;
      const name = zpoolName(pool[key]!);
      const written = await node.whenRunning(() => {
        node.zfs.zpool("set", "failmode=continue", name);
        return node.zfs.writeData(sandbox, `${name}/vol1`, 4);
      });
      data.push({ cspi: pool[key]!, ...written, live: true });
    }
    removableNow = [files.a1, files.a2, files.b1, files.b2];
    await verifyData();

    step = "expand";
    since = Date.now();
    await editCspc("a mirror added to pool A", (spec) =>
      spec.pools[0].raidGroups.push({
        type: "mirror",
        blockDevices: [{ blockDeviceName: bd("a3") }, { blockDeviceName: bd("a4") }],
      }),
    );
    await converge("expand", since, async () => {
      const cspi = await cspiOf(pool.A!);
      if (cspi?.spec.raidGroups.length !== 2)
        return `CSPI ${pool.A} has ${cspi?.spec.raidGroups.length} raid groups`;
      return poolMismatch(cspi);
    });
    removableNow = [files.a1, files.a2, files.a3, files.a4, files.b1, files.b2];
    await verifyData();

    step = "replace";
    since = Date.now();
    await editCspc(
      "a2 replaced by a5",
      (spec) => (spec.pools[0].raidGroups[0].blockDevices[1] = { blockDeviceName: bd("a5") }),
    );
    await converge("replace", since, async () => {
      const cspi = await cspiOf(pool.A!);
      if (cspi?.spec.raidGroups[0].blockDevices[1]?.devLink !== files.a5)
        return `CSPI ${pool.A} does not list a5 yet`;
      const mismatch = await poolMismatch(cspi);
      if (mismatch) return mismatch;
      const byName = new Map((await claims()).map((c) => [c.metadata.name, c]));
      if (byName.has(claimName(bd("a2")))) return `the claim of a2 is still there`;
      if (byName.get(claimName(bd("a5")))?.metadata.annotations?.[ANNOTATION.bdPredecessor])
        return `the claim of a5 still has its predecessor mark`;
      return undefined;
    });
    await verifyData();

    // volume-create: a CVC of two replicas, the only two pools there are; then the volume's data in both.
    step = "volume-create";
    since = Date.now();
    await applyCvc("8Mi");
    await converge("volume-create", since, () => volumeMismatch([pool.A!, pool.B!], "8Mi"));
    for (const cspi of [pool.A!, pool.B!]) await writeReplica(cspi);
    volumeWritten = true;
    await verifyVolume();
    await verifyData();

    step = "volume-resize";
    since = Date.now();
    await applyCvc("16Mi");
    await converge("volume-resize", since, () => volumeMismatch([pool.A!, pool.B!], "16Mi"));
    await verifyVolume();
    await verifyData();

    // add-pool: a third pool, on node C, where pool B's replica can go.
    step = "add-pool";
    since = Date.now();
    await editCspc("pool C added", (spec) =>
      spec.pools.push({
        nodeSelector: { [LABEL.hostname]: nodeName("C") },
        raidGroups: [
          { type: "mirror", blockDevices: [{ blockDeviceName: bd("c1") }, { blockDeviceName: bd("c2") }] },
        ],
      }),
    );
    await converge("add-pool", since, async () => {
      const cspi = (await cspis()).find((c) => c.spec.hostName === nodeName("C"));
      if (!cspi) return `no CSPI on node C`;
      pool.C = cspi.metadata.name!;
      return poolMismatch(cspi);
    });
    await verifyVolume();
    await verifyData();

    // remove-pool: pool B holds a replica of the volume, which moves to pool C (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md) before B goes.
    step = "remove-pool";
    await verifyData(pool.B);
    since = Date.now();
    await editCspc("pool B removed", (spec) => spec.pools.splice(1, 1));
    await converge("remove-pool", since, async () => {
      if (await cspiOf(pool.B!)) return `CSPI ${pool.B} still there`;
      const left = (await claims()).filter((c) => [bd("b1"), bd("b2")].includes(c.spec.blockDeviceName));
      if (left.length > 0) return `${left.length} claims of pool B's devices left`;
      for (const node of nodes) {
        const text = await node.zpoolStatus();
        if (text === undefined) return `node ${node.key}'s zpool does not answer`;
        if (parseZpoolStatus(text).some((p) => p.name === zpoolName(pool.B!)))
          return `pool B still imported on node ${node.key}`;
      }
      return volumeMismatch([pool.A!, pool.C!], "16Mi");
    });
    await verifyVolume();
    await verifyData();

    step = "migrate";
    since = Date.now();
    // The disks attached to node B (NDM reports them there), then the pool's nodeSelector moved.
    for (const key of ["a1", "a3", "a4", "a5"]) {
      const moved = ndmBlockDevice(files[key], nodeName("B"), DEVICE_MIB, NS);
      await api(
        "PATCH",
        `/apis/${API_VERSION}/namespaces/${NS}/blockdevices/${bd(key)}`,
        { metadata: { labels: moved.metadata.labels }, spec: { nodeAttributes: moved.spec.nodeAttributes } },
        "application/merge-patch+json",
      );
    }
    await editCspc(
      "pool A moved to node B",
      (spec) => (spec.pools[0].nodeSelector = { [LABEL.hostname]: nodeName("B") }),
    );
    await converge("migrate", since, async () => {
      const cspi = await cspiOf(pool.A!);
      if (cspi?.spec.hostName !== nodeName("B")) return `CSPI ${pool.A} spec.hostName ${cspi?.spec.hostName}`;
      return (await poolMismatch(cspi)) ?? volumeMismatch([pool.A!, pool.C!], "16Mi");
    });
    await verifyVolume();
    await verifyData();

    // volume-delete: as a user deletes a volume; done when nothing of it is left, on the cluster or on the pools.
    step = "volume-delete";
    await verifyVolume();
    since = Date.now();
    await retrying(
      `deleting CStorVolumeConfig ${volume}`,
      () => cluster.kubectl(["delete", "cvc", volume, "-n", NS, "--wait=false", "--ignore-not-found"]),
      options.boundMs,
    );
    await converge("volume-delete", since, async () => {
      for (const [resource, name] of [
        ["cstorvolumeconfigs", volume],
        ["cstorvolumes", volume],
      ]) {
        if ((await api("GET", volumePath(resource, name))).status !== 404)
          return `${resource}/${name} still there`;
      }
      for (const [path, what] of [
        [`/api/v1/namespaces/${NS}/services/${volume}`, "Service"],
        [`/apis/apps/v1/namespaces/${NS}/deployments/${volume}-target`, "target Deployment"],
      ]) {
        if ((await api("GET", path)).status !== 404) return `the volume's ${what} still there`;
      }
      const replicas = await replicasOfVolume();
      if (replicas.length > 0)
        return `CVRs left: ${replicas.map((r) => `${r.metadata.name} (finalizers ${JSON.stringify(r.metadata.finalizers)})`).join(", ")}`;
      for (const cspi of [pool.A!, pool.C!]) {
        const node = await holderOf(cspi);
        const datasets = await node.whenRunning(() =>
          node.zfs.zfs("list", "-H", "-o", "name", "-r", zpoolName(cspi)),
        );
        if (datasets.split("\n").includes(`${zpoolName(cspi)}/${volume}`))
          return `replica dataset ${zpoolName(cspi)}/${volume} still on node ${node.key}`;
      }
      return undefined;
    });
    volumeWritten = false;
    await verifyData();

    step = "delete";
    await verifyData(pool.A);
    since = Date.now();
    await converge("delete", since, async () => {
      const current = await api("GET", cspcPath(cspc));
      if (current.status !== 404) {
        if (current.body.metadata?.deletionTimestamp) return `CSPC ${cspc} still there`;
        // Deleted here, and again while refused (failing closed: a pool's replica count is unknown while its daemon
        // restarts), as a user asks again once the refusal's reason is gone.
        const answer = await api("DELETE", cspcPath(cspc));
        return `CSPC ${cspc} not deleted: ${answer.status} ${String(answer.body?.message ?? "").slice(0, 300)}`;
      }
      const left = [
        ...(await cspis()).map((c) => `CSPI ${c.metadata.name}`),
        ...(await claims()).map((c) => `claim ${c.metadata.name}`),
      ];
      return left.length > 0 ? `left: ${left.join(", ")}` : undefined;
    });

    step = "checks";
    await scheduler.stop();
    await monitor.stop();
    report.violations.push(...monitor.violations);
    // Nothing left behind, nothing stuck Terminating (a finalizer nobody removes).
    const everything = [
      ...[
        "cstorpoolclusters",
        "cstorpoolinstances",
        "blockdeviceclaims",
        "cstorvolumeconfigs",
        "cstorvolumes",
        "cstorvolumereplicas",
      ].map((r) => `/apis/${API_VERSION}/namespaces/${NS}/${r}`),
      `/apis/apps/v1/namespaces/${NS}/deployments`,
      `/api/v1/namespaces/${NS}/services`,
    ];
    for (const object of (await Promise.all(everything.map(items))).flat()) {
      const ours =
        object.metadata.labels?.[LABEL.cspc] === cspc ||
        object.metadata.labels?.[LABEL.cspi]?.startsWith(cspc) ||
        object.metadata.name.startsWith(volume);
      if (object.metadata.deletionTimestamp)
        report.violations.push({
          at: Number(elapsed()),
          step,
          what: `${object.kind ?? "object"} ${object.metadata.name} stuck Terminating with finalizers ${JSON.stringify(object.metadata.finalizers)}`,
        });
      else if (ours)
        report.violations.push({
          at: Number(elapsed()),
          step,
          what: `${object.metadata.name} left after the volume and the CSPC were deleted`,
        });
    }
    for (const node of nodes) {
      const text = await node.zpoolStatus();
      for (const p of parseZpoolStatus(text ?? ""))
        report.violations.push({
          at: Number(elapsed()),
          step,
          what: `pool ${p.name} still imported on node ${node.key}`,
        });
    }
    // Nothing forced: no -f on a zpool or zfs command that has a safety check to force past (nothing here asked).
    for (const node of nodes) {
      const commands = node.commandLog();
      report.commandsLogged += commands.length;
      for (const argv of commands) {
        if (FORCEABLE.test(argv.slice(0, 2).join(" ")) && argv.includes("-f"))
          report.violations.push({
            at: Number(elapsed()),
            step,
            what: `node ${node.key} ran ${argv.join(" ")} (forced, unasked)`,
          });
      }
    }
    // The disks and nodes of this run, as NDM and the node controller remove them: the next run names its own.
    for (const path of Object.values(files))
      await api("DELETE", `/apis/${API_VERSION}/namespaces/${NS}/blockdevices/${blockDeviceName(path)}`);
    for (const node of nodes) await api("DELETE", `/api/v1/nodes/${node.name}`);
    report.passed = report.violations.length === 0;
    if (!report.passed)
      report.failure = {
        step: report.violations[0].step,
        message: report.violations.map((v) => `[+${v.at}s, ${v.step}] ${v.what}`).join("\n"),
      };
  } catch (error) {
    const message = error instanceof StepFailure ? error.message : String((error as Error).stack ?? error);
    if (monitor) report.violations.push(...monitor.violations);
    // What the invariants saw before the step failed is often the cause: printed with it.
    report.failure = {
      step,
      message: [message, ...report.violations.map((v) => `[+${v.at}s, ${v.step}] ${v.what}`)].join("\n"),
    };
  } finally {
    const helped = helper?.stop();
    await scheduler?.stop().catch(() => undefined);
    await monitor?.stop().catch(() => undefined);
    report.faults = scheduler?.counts() ?? {};
    report.faultsInjected = scheduler?.injected.length ?? 0;
    report.releasesChecked = monitor?.releasesChecked ?? 0;
    report.replicaReleasesChecked = monitor?.replicaReleasesChecked ?? 0;
    if (report.failure) {
      const dir = join(options.logDir, `seed-${seed}`);
      mkdirSync(dir, { recursive: true });
      for (const node of nodes)
        node.daemons.forEach((d, i) => d.writeLog(join(dir, `daemon-${node.key}-${i}.log`)));
      hooks.processes.forEach((p, i) => p.writeLog(join(dir, `hook-server-${i}.log`)));
      log(
        `logs of the failed run: ${dir}; Metacontroller errors: ${JSON.stringify(metacontroller?.errors().slice(-5) ?? [])}`,
      );
    }
    await helped;
    await metacontroller?.stop().catch(() => undefined);
    await hooks.stop().catch(() => undefined);
    for (const node of nodes) {
      await node.stopDaemon("SIGTERM").catch(() => undefined);
      await node.zfs.stop().catch(() => undefined);
    }
    sandbox.cleanup();
    report.seconds = Math.round((Date.now() - startedAt) / 1000);
  }
  return report;
}
