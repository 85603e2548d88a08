// The CSI driver's controller (docs/adr/0047-the-csi-driver-one-writer-per-volume.md): the driver process
// (csi/main.ts --mode=controller, as its shipped ServiceAccount) called over its unix socket, while the real
// apiserver, the hook server under the Metacontroller emulator and two real node daemons on zfs-fuse nodes turn each
// CStorVolumeConfig it writes into a Bound volume with replicas on the pools, and grow and delete them: one writer
// per volume, a published volume kept from deletion, GetCapacity from placement's own accounting, a volume that
// cannot be placed answered UNAVAILABLE with the reason, and growth answered once the replicas grew.
import { status, type ServiceError } from "@grpc/grpc-js";
import { expect } from "chai";
import { CSI, LABEL } from "../../api/constants.js";
import type { CSPI, CVC, CVR } from "../../api/types.js";
import { CsiWorld } from "../../testkit/csi-world.js";
import { projectInstalled, waitUntil } from "../../testkit/kube.js";

const MiB = 1024 * 1024;
/** Each pool's device: a sparse file, room for every volume made here while deletions catch up. */
const DEVICE_MIB = 4096;
const VOLUME_BYTES = 64 * MiB;
const WAIT_MS = 120_000;

describe("csi: the controller against the real apiserver, the hooks and node daemons", function () {
  this.timeout(25 * 60_000);
  let world: CsiWorld;
  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (e: ServiceError) => e,
    );
  const capability = { mount: { fs_type: "ext4" }, access_mode: { mode: "SINGLE_NODE_WRITER" as const } };

  before(async () => {
    world = await CsiWorld.start({ cluster: await projectInstalled(), deviceMiB: DEVICE_MIB });
  });

  after(async () => {
    await world?.stop();
  });

  it("publishes a volume to one node at a time: a second node is refused until the first unpublishes", async () => {
    const [nodeA, nodeB] = world.nodeNames;
    const { volume } = await world.client.call("Controller", "CreateVolume", {
      name: `one-writer-${world.sandbox.id}`,
      capacity_range: { required_bytes: VOLUME_BYTES },
      volume_capabilities: [capability],
      parameters: world.parameters(),
    });
    const id = volume!.volume_id!;
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
    const { volume } = await world.client.call("Controller", "CreateVolume", {
      name: `grow-${world.sandbox.id}`,
      capacity_range: { required_bytes: VOLUME_BYTES },
      volume_capabilities: [capability],
      parameters: world.parameters(),
    });
    const id = volume!.volume_id!;
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
});
