// The CSI driver in node mode (csi/main.ts --mode=node: csi/node/service.ts on the driver's gRPC server), as the
// node DaemonSet starts it, called over its unix socket as the kubelet calls it: what it says about itself, every
// request it refuses before it touches the node (each with the code csi-sanity expects and a message naming the
// fix), and the calls that need no iSCSI on this host. The operations themselves, logging in and mounting, run in
// a user-mode Linux guest (node-operations.test.ts).
import { mkdirSync, mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { status, type ServiceError } from "@grpc/grpc-js";
import { expect } from "chai";
import { CSI } from "../../api/constants.js";
import { CHAP_KEYS } from "../../csi/node/service.js";
import type { RequestOf, VolumeCapability } from "../../csi/protocol.js";
import { CsiClient } from "../../testkit/csi-client.js";
import { CsiDriverProcess } from "../../testkit/csi-driver-process.js";

const mount: VolumeCapability = {
  mount: { fs_type: "ext4", mount_flags: [] },
  access_mode: { mode: "SINGLE_NODE_WRITER" },
};

describe("csi node service: the driver in node mode, over its socket", () => {
  let dir: string;
  let driver: CsiDriverProcess;
  let client: CsiClient;
  const refusal = (call: Promise<unknown>) =>
    call.then(
      () => undefined,
      (e: ServiceError) => ({ code: e.code, details: e.details }),
    );
  const stageRequest = (): RequestOf<"Node", "NodeStageVolume"> => ({
    volume_id: "pvc-1",
    staging_target_path: join(dir, "staging"),
    volume_capability: mount,
    volume_context: {
      [CSI.contextKeys.targetPortal]: "10.96.0.10:3260",
      [CSI.contextKeys.iqn]: "iqn.2016-09.com.openebs.cstor:pvc-1",
      [CSI.contextKeys.lun]: "0",
    },
    secrets: { [CHAP_KEYS.user]: "pvc-1", [CHAP_KEYS.password]: "secret-0123456789" },
  });

  before(async function () {
    this.timeout(90_000);
    dir = mkdtempSync(join(tmpdir(), "csi-node-service-"));
    // As the node DaemonSet starts it: no API access, the node's name from the Node.
    driver = await CsiDriverProcess.start({
      mode: "node",
      dir,
      kubeconfig: join(dir, "no-kubeconfig"),
      namespace: "openebs",
      env: { NODE_NAME: "worker-1" },
    });
    client = new CsiClient(driver.socket);
  });

  after(async () => {
    client?.close();
    await driver?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("names the node by its Kubernetes Node and offers staging, stats, expansion and the volume condition", async () => {
    expect(await client.call("Node", "NodeGetInfo", {})).to.deep.equal({
      node_id: "worker-1",
      max_volumes_per_node: 0,
      accessible_topology: null,
    });
    const { capabilities } = await client.call("Node", "NodeGetCapabilities", {});
    expect(capabilities?.map((c) => c.rpc?.type)).to.deep.equal([
      "STAGE_UNSTAGE_VOLUME",
      "GET_VOLUME_STATS",
      "EXPAND_VOLUME",
      "VOLUME_CONDITION",
    ]);
  });

  it("refuses a stage without its volume id, staging path or capability (INVALID_ARGUMENT), before any login", async () => {
    for (const [field, expected] of [
      ["volume_id", "NodeStageVolume: volume_id is empty; the CO must name it"],
      ["staging_target_path", "NodeStageVolume: staging_target_path is empty; the CO must name it"],
      ["volume_capability", "volume pvc-1: volume_capability is missing; the CO must give it"],
    ] as const) {
      const request = { ...stageRequest(), [field]: undefined };
      expect(await refusal(client.call("Node", "NodeStageVolume", request)), field).to.deep.equal({
        code: status.INVALID_ARGUMENT,
        details: expected,
      });
    }
  });

  it("refuses a stage whose context or secret lacks what the login needs, naming the keys and where they come from", async () => {
    const noContext = await refusal(
      client.call("Node", "NodeStageVolume", { ...stageRequest(), volume_context: { lun: "0" } }),
    );
    expect(noContext).to.deep.equal({
      code: status.INVALID_ARGUMENT,
      details:
        "volume pvc-1: volume_context lacks targetPortal, iqn; it is what CreateVolume answered (a PV made by hand must carry them as volumeAttributes)",
    });
    const noSecret = await refusal(
      client.call("Node", "NodeStageVolume", { ...stageRequest(), secrets: {} }),
    );
    expect(noSecret?.code).to.equal(status.INVALID_ARGUMENT);
    expect(noSecret?.details).to.match(
      /node-stage secret lacks node.session.auth.username or node.session.auth.password: the StorageClass names the volume's CHAP Secret/,
    );
  });

  it("refuses what one node cannot serve: a multi-node access mode, a filesystem it does not make, both block and mount", async () => {
    const multi = await refusal(
      client.call("Node", "NodeStageVolume", {
        ...stageRequest(),
        volume_capability: { ...mount, access_mode: { mode: "MULTI_NODE_MULTI_WRITER" } },
      }),
    );
    expect(multi?.code).to.equal(status.FAILED_PRECONDITION);
    expect(multi?.details).to.match(
      /^volume pvc-1: access mode MULTI_NODE_MULTI_WRITER is not served: a cStor volume is used by one node at a time/,
    );
    const btrfs = await refusal(
      client.call("Node", "NodeStageVolume", {
        ...stageRequest(),
        volume_capability: { ...mount, mount: { fs_type: "btrfs", mount_flags: [] } },
      }),
    );
    expect(btrfs).to.deep.equal({
      code: status.FAILED_PRECONDITION,
      details: 'volume pvc-1: fs_type "btrfs" is not served: write ext4 or xfs',
    });
    const both = await refusal(
      client.call("Node", "NodeStageVolume", {
        ...stageRequest(),
        volume_capability: { ...mount, block: {} },
      }),
    );
    expect(both).to.deep.equal({
      code: status.FAILED_PRECONDITION,
      details: "volume pvc-1: a capability is either block or mount, not both",
    });
  });

  it("refuses a publish without its target or before staging: INVALID_ARGUMENT, FAILED_PRECONDITION", async () => {
    const publishRequest = {
      volume_id: "pvc-1",
      staging_target_path: join(dir, "staging"),
      target_path: join(dir, "pod"),
      volume_capability: mount,
    };
    expect(
      (await refusal(client.call("Node", "NodePublishVolume", { ...publishRequest, target_path: "" })))?.code,
    ).to.equal(status.INVALID_ARGUMENT);
    expect(
      await refusal(client.call("Node", "NodePublishVolume", { ...publishRequest, staging_target_path: "" })),
    ).to.deep.equal({
      code: status.FAILED_PRECONDITION,
      details: "volume pvc-1: staging_target_path is empty; stage it first",
    });
    mkdirSync(join(dir, "staging"), { recursive: true });
    expect(await refusal(client.call("Node", "NodePublishVolume", publishRequest))).to.deep.equal({
      code: status.FAILED_PRECONDITION,
      details: `volume pvc-1: staging path ${join(dir, "staging")} is not mounted: stage the volume first (NodeStageVolume)`,
    });
  });

  it("unpublishes and unstages what is not there as success, and removes a target directory left behind", async () => {
    const target = join(dir, "left-behind");
    mkdirSync(target);
    expect(
      await client
        .call("Node", "NodePublishVolume", { volume_id: "", target_path: "" })
        .catch((e: ServiceError) => e.code),
    ).to.equal(status.INVALID_ARGUMENT);
    await client.call("Node", "NodeUnpublishVolume", { volume_id: "pvc-1", target_path: target });
    expect(existsSync(target)).to.equal(false);
    await client.call("Node", "NodeUnpublishVolume", { volume_id: "pvc-1", target_path: target });
    await client.call("Node", "NodeUnstageVolume", {
      volume_id: "pvc-1",
      staging_target_path: join(dir, "never-staged"),
    });
  });

  it("answers stats and expansion of a path with no volume NOT_FOUND, and of a directory that is no mount point abnormal", async () => {
    for (const path of ["some/path", join(dir, "nowhere")]) {
      expect(
        (await refusal(client.call("Node", "NodeGetVolumeStats", { volume_id: "pvc-1", volume_path: path })))
          ?.code,
        path,
      ).to.equal(status.NOT_FOUND);
      expect(
        (
          await refusal(
            client.call("Node", "NodeExpandVolume", {
              volume_id: "pvc-1",
              volume_path: path,
              capacity_range: { required_bytes: 1 },
            }),
          )
        )?.code,
        path,
      ).to.equal(status.NOT_FOUND);
    }
    expect(
      await client.call("Node", "NodeGetVolumeStats", { volume_id: "pvc-1", volume_path: dir }),
    ).to.deep.equal({
      usage: [],
      volume_condition: {
        abnormal: true,
        message: `${dir} is not a mount point: the volume is not mounted there (stage and publish it again)`,
      },
    });
  });
});
