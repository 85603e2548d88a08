// The CSI driver's controller against what others wrote (docs/adr/0047-the-csi-driver-one-writer-per-volume.md):
// csi-sanity (kubernetes-csi/csi-test v5.6.0, built by scripts/csi-env.sh) drives the driver process
// (csi/main.ts --mode=controller, as its shipped ServiceAccount) over its unix socket, while the real apiserver,
// the hook server under the Metacontroller emulator and two real node daemons on zfs-fuse nodes
// (testkit/csi-world.ts) turn each CStorVolumeConfig it writes into a Bound volume with replicas on the pools, and
// grow and delete them; no target runs there, so its snapshot pass is played (testkit/snapshot-player.ts). Then
// what csi-sanity does not check: one writer per volume, a published volume kept from deletion, GetCapacity from
// placement's own accounting, a volume that cannot be placed answered UNAVAILABLE with the reason, growth answered
// once the replicas grew, a snapshot's object and answer, a volume kept while it has snapshots, and a failed
// snapshot answered with the target's reason.
import { status, type ServiceError } from "@grpc/grpc-js";
import { expect } from "chai";
import { CSI, FINALIZER, LABEL } from "../../api/constants.js";
import type { CSPI, CVC, CVR, CVSnap } from "../../api/types.js";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { CsiDriverProcess } from "../../testkit/csi-driver-process.js";
import { judgeSanityRun, runCsiSanity } from "../../testkit/csi-sanity.js";
import { CsiWorld } from "../../testkit/csi-world.js";
import { projectInstalled, waitUntil } from "../../testkit/kube.js";

const MiB = 1024 * 1024;
/** Each pool's device: a sparse file, room for every volume made here while deletions catch up. */
const DEVICE_MIB = 4096;
const VOLUME_BYTES = 64 * MiB;
const WAIT_MS = 120_000;

/**
 * Specs this run leaves out, and why. Every other skip is csi-sanity's own, for a capability the driver does not
 * advertise: CAPABILITY_SKIPS names each message and why the driver does not.
 */
const SKIPPED_HERE = {
  "Node Service":
    "the node's specs stage volumes: test/csi/node-sanity.test.ts runs them in user-mode Linux, where a node logs in to a target; the driver's node mode here answers NodeGetInfo and csi-sanity's cleanup only",
};
const CAPABILITY_SKIPS: Record<string, string> = {
  "GetSnapshot not supported": "GetSnapshot is alpha (GET_SNAPSHOT); csi-snapshotter asks ListSnapshots",
  "SNAPSHOT_ACCESSIBILITY_CONSTRAINTS not supported":
    "no topology: a snapshot is reachable from every node, as its volume is",
  "GroupControllerService not supported": "no group snapshots",
  "ListVolumes not supported": "LIST_VOLUMES is not advertised: Kubernetes does not need it",
  "ControllerModifyVolume not supported": "no VolumeAttributesClass (MODIFY_VOLUME)",
  "Modify volume not supported": "no VolumeAttributesClass",
  "Modify Volume not supported": "no VolumeAttributesClass",
  "ControllerGetVolumeHealth not supported": "the alpha volume health RPCs are not served",
  "ControllerListVolumeHealth not supported": "the alpha volume health RPCs are not served",
  "ControllerPublishVolume.readonly field not supported":
    "PUBLISH_READONLY is not advertised: a read-only publish is the node's read-only mount",
  "testnodevolumeattachlimit not enabled": "no attach limit per node (max_volumes_per_node 0)",
};

describe("csi: the controller against the real apiserver, the hooks and node daemons", function () {
  this.timeout(25 * 60_000);
  let world: CsiWorld;
  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (e: ServiceError) => e,
    );
  const capability = { mount: { fs_type: "ext4" }, access_mode: { mode: "SINGLE_NODE_WRITER" as const } };
  /** A volume of the world's class, answered Bound; its id. */
  const newVolume = async (name: string) => {
    const { volume } = await world.client.call("Controller", "CreateVolume", {
      name,
      capacity_range: { required_bytes: VOLUME_BYTES },
      volume_capabilities: [capability],
      parameters: world.parameters(),
    });
    return volume!.volume_id!;
  };

  /** DeleteVolume of `id` answers FAILED_PRECONDITION saying why: the volume stays. */
  const expectDeletionRefused = async (id: string, why: string) => {
    const refused = await refusal(world.client.call("Controller", "DeleteVolume", { volume_id: id }));
    expect(refused).to.include({ code: status.FAILED_PRECONDITION });
    expect(refused!.details).to.include(why);
    expect(await world.get<CVC>("cstorvolumeconfigs", id), "the volume stays").to.not.equal(undefined);
  };

  before(async () => {
    world = await CsiWorld.start({ cluster: await projectInstalled(), deviceMiB: DEVICE_MIB });
  });

  after(async () => {
    await world?.stop();
  });

  it("passes csi-sanity's Identity and Controller specs; every skip is one named here with its reason", async () => {
    const dir = join(world.dir, "sanity");
    mkdirSync(dir);
    // The node endpoint csi-sanity also dials: NodeGetInfo names the node to publish to, its cleanup unpublishes.
    const node = await CsiDriverProcess.start({
      mode: "node",
      dir: join(world.dir, "node"),
      namespace: world.namespace,
      env: { NODE_NAME: world.nodeNames[0] },
    });
    try {
      const run = await runCsiSanity({
        endpoint: `unix://${node.socket}`,
        controllerEndpoint: `unix://${world.driver.socket}`,
        dir,
        parameters: world.parameters(),
        volumeBytes: VOLUME_BYTES,
        expandBytes: 2 * VOLUME_BYTES,
        skip: Object.keys(SKIPPED_HERE).join("|"),
      });
      const verdict = judgeSanityRun(
        run,
        (s) =>
          Object.keys(SKIPPED_HERE).some((name) => s.name.includes(name)) ||
          CAPABILITY_SKIPS[s.message.replace(/^skipped - /, "")] !== undefined,
      );
      expect(verdict.failed, `csi-sanity:\n${run.output.slice(-6000)}${world.tails()}`).to.deep.equal([]);
      expect(run.code, run.output.slice(-3000)).to.equal(0);
      expect(verdict.unexplained).to.deep.equal([]);
      const { summary } = verdict;
      process.stdout.write(`      csi-sanity: ${JSON.stringify(summary)}\n`);
      expect(summary.passed).to.be.at.least(30);
    } finally {
      await node.stop();
    }
  });

  it("publishes a volume to one node at a time: a second node is refused until the first unpublishes", async () => {
    const [nodeA, nodeB] = world.nodeNames;
    const id = await newVolume(`one-writer-${world.sandbox.id}`);
    const publish = (node: string) =>
      world.client.call("Controller", "ControllerPublishVolume", {
        volume_id: id,
        node_id: node,
        volume_capability: capability,
      });
    const holder = async () =>
      (await world.get<CVC>("cstorvolumes", id))?.metadata.annotations?.[CSI.publishedNodeAnnotation];
    expect(await holder(), "a new volume is published nowhere").to.equal("");
    await publish(nodeA);
    await publish(nodeA);
    expect(await holder()).to.equal(nodeA);
    const second = await refusal(publish(nodeB));
    expect(second).to.include({ code: status.FAILED_PRECONDITION });
    expect(second!.details).to.include(`published to node ${nodeA}`);
    const deletion = await refusal(world.client.call("Controller", "DeleteVolume", { volume_id: id }));
    expect(deletion, "a published volume is not deleted").to.include({ code: status.FAILED_PRECONDITION });
    await world.client.call("Controller", "ControllerUnpublishVolume", { volume_id: id, node_id: nodeB });
    expect(await holder(), "unpublishing from a node that does not hold it changes nothing").to.equal(nodeA);
    await world.client.call("Controller", "ControllerUnpublishVolume", { volume_id: id, node_id: nodeA });
    await publish(nodeB);
    expect(await holder()).to.equal(nodeB);
    await world.client.call("Controller", "ControllerUnpublishVolume", { volume_id: id, node_id: nodeB });
    await world.client.call("Controller", "DeleteVolume", { volume_id: id });
  });

  it("answers GetCapacity with the largest volume placement would place on the class's pools", async () => {
    const one = await world.client.call("Controller", "GetCapacity", { parameters: world.parameters() });
    const pools = await world.list<CSPI>("cstorpoolinstances", `${LABEL.cspc}=${world.cspc}`);
    expect(one.available_capacity).to.be.greaterThan(VOLUME_BYTES);
    expect(one.available_capacity).to.be.lessThan(DEVICE_MIB * MiB);
    // Two replicas on two pools: what the smaller pool has left.
    expect(pools).to.have.length(2);
    const unknown = await refusal(
      world.client.call("Controller", "GetCapacity", {
        parameters: { cstorPoolCluster: world.cspc, replicacount: "2" },
      }),
    );
    expect(unknown).to.include({ code: status.INVALID_ARGUMENT });
    expect(unknown!.details).to.include("replicacount");
  });

  it("answers a volume the pools cannot hold UNAVAILABLE with what it waits for, and makes it once they can", async () => {
    const name = `too-big-${world.sandbox.id}`;
    const request = {
      name,
      capacity_range: { required_bytes: 2 * DEVICE_MIB * MiB },
      volume_capabilities: [capability],
      parameters: world.parameters(),
    };
    const waiting = await refusal(
      world.client.call("Controller", "CreateVolume", request, { timeoutMs: 5000 }),
    );
    expect(waiting).to.include({ code: status.UNAVAILABLE });
    expect(waiting!.details).to.match(/is Pending \(NoPlacement\).*waiting for it to be Bound/);
    const again = await refusal(
      world.client.call("Controller", "CreateVolume", request, { timeoutMs: 3000 }),
    );
    expect(again, "a retry finds the same volume and still waits").to.include({ code: status.UNAVAILABLE });
    await world.client.call("Controller", "DeleteVolume", { volume_id: name });
    await waitUntil(
      async () => !(await world.get<CVC>("cstorvolumeconfigs", name)),
      WAIT_MS,
      () => `${name} was not deleted`,
    );
  });

  it("grows a volume: its CStorVolumeConfig first, its replicas on the pools, then the answer", async () => {
    const id = await newVolume(`grow-${world.sandbox.id}`);
    const grown = await world.client.call("Controller", "ControllerExpandVolume", {
      volume_id: id,
      capacity_range: { required_bytes: 3 * VOLUME_BYTES },
    });
    expect(grown).to.deep.equal({ capacity_bytes: 3 * VOLUME_BYTES, node_expansion_required: true });
    const replicas = await world.list<CVR>("cstorvolumereplicas", `${LABEL.replicaVolume}=${id}`);
    expect(replicas.map((r) => r.status?.capacity?.total)).to.deep.equal(["192Mi", "192Mi"]);
    const smaller = await world.client.call("Controller", "ControllerExpandVolume", {
      volume_id: id,
      capacity_range: { required_bytes: VOLUME_BYTES },
    });
    expect(smaller.capacity_bytes, "a smaller size shrinks nothing").to.equal(3 * VOLUME_BYTES);
    await world.client.call("Controller", "DeleteVolume", { volume_id: id });
  });

  it("takes a snapshot: its CStorVolumeSnapshot, the answer once ReadyToUse, the volume kept until it goes", async () => {
    const id = await newVolume(`snapped-${world.sandbox.id}`);
    const name = `snapshot-${world.sandbox.id}`;
    const request = {
      name,
      source_volume_id: id,
      parameters: {
        "csi.storage.k8s.io/volumesnapshot/name": "before-upgrade",
        "csi.storage.k8s.io/volumesnapshot/namespace": "shop",
      },
    };
    const { snapshot } = await world.client.call("Controller", "CreateSnapshot", request);
    const cvsnap = (await world.get<CVSnap>("cstorvolumesnapshots", name))!;
    expect(cvsnap.spec).to.deep.equal({ volume: id });
    expect(cvsnap.metadata.labels).to.include({ [LABEL.replicaVolume]: id });
    expect(cvsnap.metadata.finalizers).to.deep.equal([FINALIZER.replicaSnapshots]);
    expect(cvsnap.metadata.annotations).to.include({ [CSI.volumeSnapshotAnnotation]: "shop/before-upgrade" });
    const replicas = await world.list<CVR>("cstorvolumereplicas", `${LABEL.replicaVolume}=${id}`);
    expect(cvsnap.status?.replicas).to.deep.equal(replicas.map((r) => r.metadata.name).sort());
    const taken = Date.parse(cvsnap.status!.creationTime!);
    expect(snapshot).to.deep.include({
      snapshot_id: name,
      source_volume_id: id,
      size_bytes: VOLUME_BYTES,
      ready_to_use: true,
    });
    expect(snapshot!.creation_time!.seconds! * 1000 + snapshot!.creation_time!.nanos! / 1e6).to.equal(taken);
    const again = await world.client.call("Controller", "CreateSnapshot", request);
    expect(again.snapshot, "the same name and volume: the same snapshot").to.deep.equal(snapshot);
    const listed = await world.client.call("Controller", "ListSnapshots", { source_volume_id: id });
    expect(listed.entries!.map((e) => e.snapshot!.snapshot_id)).to.deep.equal([name]);

    const kept = await refusal(world.client.call("Controller", "DeleteVolume", { volume_id: id }));
    expect(kept).to.include({ code: status.FAILED_PRECONDITION });
    expect(kept!.details).to.include(`has snapshots ${name} (VolumeSnapshot shop/before-upgrade)`);
    expect(kept!.details).to.include("delete those VolumeSnapshots first");
    await world.client.call("Controller", "DeleteSnapshot", { snapshot_id: name });
    // The snapshot's pools are still at work (its finalizer): the volume's deletion waits for them.
    await world.client.call("Controller", "DeleteVolume", { volume_id: id });
    expect(await world.get<CVSnap>("cstorvolumesnapshots", name)).to.equal(undefined);
    await world.client.call("Controller", "DeleteSnapshot", { snapshot_id: name });
  });

  it("answers a snapshot that failed with the target's reason, and a restore of it once the target took it", async () => {
    const id = await newVolume(`unlucky-${world.sandbox.id}`);
    const name = `failing-${world.sandbox.id}`;
    const reason = `replica ${id}-b did not report the snapshot within 5 s`;
    world.snapshots.failSnapshot(name, reason);
    const request = { name, source_volume_id: id };
    const failed = await refusal(world.client.call("Controller", "CreateSnapshot", request));
    expect(failed).to.include({ code: status.UNAVAILABLE });
    expect(failed!.details).to.include(`failed: ReplicasDidNotAnswer: ${reason}`);
    const restoreRequest = {
      name: `restored-${world.sandbox.id}`,
      volume_capabilities: [capability],
      parameters: world.parameters(),
      volume_content_source: { snapshot: { snapshot_id: name } },
    };
    const early = await refusal(world.client.call("Controller", "CreateVolume", restoreRequest));
    expect(early, "a restore of a failed snapshot waits for it").to.include({ code: status.UNAVAILABLE });
    expect(early!.details).to.include(reason);
    world.snapshots.stopFailing(name);
    await waitUntil(
      async () => (await world.get<CVSnap>("cstorvolumesnapshots", name))?.status?.phase === "ReadyToUse",
      WAIT_MS,
      () => `the played target never took ${name} again`,
    );
    const { snapshot } = await world.client.call("Controller", "CreateSnapshot", request);
    expect(snapshot).to.include({ snapshot_id: name, ready_to_use: true });

    const { volume } = await world.client.call("Controller", "CreateVolume", restoreRequest);
    expect(volume!.content_source?.snapshot, "a restore says what it was made from").to.deep.equal({
      snapshot_id: name,
    });
    expect(volume!.capacity_bytes, "no range asked: the snapshot's size").to.equal(VOLUME_BYTES);
    const restored = (await world.get<CVC>("cstorvolumeconfigs", volume!.volume_id!))!;
    expect(restored.spec.source).to.deep.equal({ snapshot: name, volume: id });
    const sourcePools = (await world.get<CVC>("cstorvolumeconfigs", id))!.status!.pools;
    expect(restored.status?.restore, "every replica a clone where the snapshot is").to.deep.equal({
      snapshot: name,
      clonedPools: sourcePools,
      copiedPools: [],
    });
    await expectDeletionRefused(id, `volumes ${volume!.volume_id} were restored or cloned from volume ${id}`);
    await world.client.call("Controller", "DeleteVolume", { volume_id: volume!.volume_id! });
    await world.client.call("Controller", "DeleteSnapshot", { snapshot_id: name });
    await world.client.call("Controller", "DeleteVolume", { volume_id: id });
  });

  it("clones a volume through a snapshot of its own, unlisted, deleted with the clone", async () => {
    const id = await newVolume(`original-${world.sandbox.id}`);
    const { volume } = await world.client.call("Controller", "CreateVolume", {
      name: `clone-${world.sandbox.id}`,
      capacity_range: { required_bytes: 2 * VOLUME_BYTES },
      volume_capabilities: [capability],
      parameters: world.parameters(),
      volume_content_source: { volume: { volume_id: id } },
    });
    const clone = volume!.volume_id!;
    expect(volume!.capacity_bytes, "larger than its source, as asked").to.equal(2 * VOLUME_BYTES);
    const own = `${clone}-source`;
    expect((await world.get<CVC>("cstorvolumeconfigs", clone))!.spec.source).to.deep.equal({
      snapshot: own,
      volume: id,
    });
    expect((await world.get<CVSnap>("cstorvolumesnapshots", own))!.metadata.annotations).to.include({
      [CSI.cloneVolumeAnnotation]: clone,
    });
    const listed = await world.client.call("Controller", "ListSnapshots", { source_volume_id: id });
    expect(listed.entries, "the clone's snapshot is not a user's").to.deep.equal([]);
    await expectDeletionRefused(id, `volumes ${clone} were restored or cloned from volume ${id}`);
    await world.client.call("Controller", "DeleteVolume", { volume_id: clone });
    await waitUntil(
      async () => !(await world.get<CVSnap>("cstorvolumesnapshots", own)),
      WAIT_MS,
      () => `the clone's snapshot ${own} stayed after the clone was deleted${world.tails()}`,
    );
    await world.client.call("Controller", "DeleteVolume", { volume_id: id });
  });

  it("deleted every volume above down to its replicas on the pools, without one Warning from a node", async () => {
    await waitUntil(
      async () => (await world.list<CVR>("cstorvolumereplicas", `${LABEL.cspc}=${world.cspc}`)).length === 0,
      WAIT_MS,
      () => `replicas left on the pools${world.tails()}`,
    );
    const warnings = await world.nodeWarnings();
    expect(warnings, warnings.join("\n")).to.deep.equal([]);
  });
});
