// The controller csi-sanity's node specs make their volumes through (test/csi/node-sanity.test.ts), played by a
// tgtd of the test's network. csi-sanity hands every volume one set of node-stage secrets, while the driver's
// controller gives each volume its own CHAP account and a target pod serving LUN 0 through LIO, made by the hooks
// and the pools (test/csi/controller.test.ts runs csi-sanity's controller specs against that one). So here each
// volume is a sparse file exported by tgtd as LUN 1 (tgtd's LUN 0 is its controller), bound to the one CHAP
// account csi-sanity holds; what the node sees is the driver's: the target named volumeIqn(<id>), the context
// keys, the ACL admitting only the initiator of the node it is published to, one node at a time.
import { rmSync, statfsSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CSI } from "../../api/constants.js";
import { CONTROLLER_CAPABILITIES } from "../../csi/controller/service.js";
import {
  checkCapabilities,
  fitsRange,
  required,
  requestedBytes,
  unservedCapability,
  volumeIdFor,
} from "../../csi/controller/request.js";
import { status } from "@grpc/grpc-js";
import { alreadyExists, CsiError, failedPrecondition, invalidArgument, notFound } from "../../csi/errors.js";
import type { Handlers } from "../../csi/server.js";
import { nodeInitiatorIqn, volumeIqn } from "../../lib/volume/iqn.js";
import type { Tgtd } from "./tgtd.js";

/** The node specs take no snapshots: the played controller advertises none (the real one's run covers them). */
const NO_SNAPSHOTS = "the played controller of the node specs takes no snapshots";
/** tgtd serves a target's data from LUN 1. */
const DATA_LUN = 1;

interface PlayedVolume {
  id: string;
  name: string;
  tid: number;
  file: string;
  bytes: number;
  /** The node whose initiator the target admits, if any. */
  node?: string;
}

export interface TgtVolumeControllerOptions {
  tgtd: Tgtd;
  /** Where the volumes' files go. */
  dir: string;
  /** The one CHAP account of every volume: csi-sanity's NodeStageVolumeSecret. */
  chap: { user: string; password: string };
}

export class TgtVolumeController {
  private readonly volumes = new Map<string, PlayedVolume>();
  private nextTid = 1;

  constructor(private readonly options: TgtVolumeControllerOptions) {}

  /** The CHAP account every volume binds; call once before serving. */
  async start(): Promise<void> {
    await this.options.tgtd.tgt.createAccount(this.options.chap.user, this.options.chap.password);
  }

  handlers(): Handlers<"Controller"> {
    return {
      CreateVolume: async (request) => {
        const name = required(request.name, "name", "CreateVolume");
        checkCapabilities(request.volume_capabilities, "CreateVolume");
        const id = volumeIdFor(name);
        const existing = this.volumes.get(id);
        if (existing && !fitsRange(existing.bytes, request.capacity_range))
          throw alreadyExists(`CreateVolume: volume ${id} exists with ${existing.bytes} bytes`);
        const volume =
          existing ?? (await this.create(id, name, requestedBytes(request.capacity_range, "CreateVolume")));
        return { volume: this.answer(volume) };
      },
      DeleteVolume: async (request) => {
        const volume = this.volumes.get(required(request.volume_id, "volume_id", "DeleteVolume"));
        if (!volume) return {};
        if (volume.node)
          throw failedPrecondition(`DeleteVolume: volume ${volume.id} is published to node ${volume.node}`);
        await this.options.tgtd.tgt.delete(volume.tid);
        rmSync(volume.file, { force: true });
        this.volumes.delete(volume.id);
        return {};
      },
      ControllerPublishVolume: async (request) => {
        const volume = this.known(request.volume_id, "ControllerPublishVolume");
        const node = required(request.node_id, "node_id", "ControllerPublishVolume");
        const why = unservedCapability(request.volume_capability);
        if (why) throw invalidArgument(`ControllerPublishVolume: ${why}`);
        if (volume.node && volume.node !== node)
          throw failedPrecondition(
            `ControllerPublishVolume: volume ${volume.id} is published to node ${volume.node}`,
          );
        if (!volume.node) await this.admit(volume, node, "bind");
        return { publish_context: {} };
      },
      ControllerUnpublishVolume: async (request) => {
        const volume = this.volumes.get(
          required(request.volume_id, "volume_id", "ControllerUnpublishVolume"),
        );
        if (volume?.node && (!request.node_id || request.node_id === volume.node))
          await this.admit(volume, volume.node, "unbind");
        return {};
      },
      ValidateVolumeCapabilities: async (request) => {
        this.known(request.volume_id, "ValidateVolumeCapabilities");
        checkCapabilities(request.volume_capabilities, "ValidateVolumeCapabilities");
        return { confirmed: { volume_capabilities: request.volume_capabilities ?? [] } };
      },
      GetCapacity: async () => {
        const { bavail, bsize } = statfsSync(this.options.dir);
        return { available_capacity: bavail * bsize };
      },
      ControllerGetCapabilities: async () => ({
        capabilities: CONTROLLER_CAPABILITIES.filter((type) => !type.includes("SNAPSHOT")).map((type) => ({
          rpc: { type },
        })),
      }),
      CreateSnapshot: async () => {
        throw new CsiError(status.UNIMPLEMENTED, NO_SNAPSHOTS);
      },
      DeleteSnapshot: async () => {
        throw new CsiError(status.UNIMPLEMENTED, NO_SNAPSHOTS);
      },
      ListSnapshots: async () => {
        throw new CsiError(status.UNIMPLEMENTED, NO_SNAPSHOTS);
      },
      ControllerExpandVolume: async (request) => {
        const volume = this.known(request.volume_id, "ControllerExpandVolume");
        const bytes = requestedBytes(request.capacity_range, "ControllerExpandVolume");
        if (bytes > volume.bytes) {
          // The sessions are idle while csi-sanity expands, which is when tgtd may reopen a LUN (ADR 41).
          truncateSync(volume.file, bytes);
          await this.options.tgtd.tgt.reopen(volume.tid, DATA_LUN, volume.file);
          volume.bytes = bytes;
        }
        return { capacity_bytes: volume.bytes, node_expansion_required: true };
      },
    };
  }

  private known(id: string | undefined, rpc: string): PlayedVolume {
    const volume = this.volumes.get(required(id, "volume_id", rpc));
    if (!volume) throw notFound(`${rpc}: no volume ${id}`);
    return volume;
  }

  private async create(id: string, name: string, bytes: number): Promise<PlayedVolume> {
    const volume: PlayedVolume = {
      id,
      name,
      tid: this.nextTid++,
      file: join(this.options.dir, `${id}.img`),
      bytes,
    };
    writeFileSync(volume.file, "");
    truncateSync(volume.file, bytes);
    await this.tgtadm(volume, ["--mode", "target", "--op", "new", "--targetname", volumeIqn(id)]);
    await this.tgtadm(volume, [
      "--mode",
      "logicalunit",
      "--op",
      "new",
      "--lun",
      String(DATA_LUN),
      "--backing-store",
      volume.file,
    ]);
    await this.tgtadm(volume, ["--mode", "account", "--op", "bind", "--user", this.options.chap.user]);
    this.volumes.set(id, volume);
    return volume;
  }

  private async admit(volume: PlayedVolume, node: string, op: "bind" | "unbind"): Promise<void> {
    await this.tgtadm(volume, ["--mode", "target", "--op", op, "--initiator-name", nodeInitiatorIqn(node)]);
    volume.node = op === "bind" ? node : undefined;
  }

  private async tgtadm(volume: PlayedVolume, args: string[]): Promise<void> {
    const done = await this.options.tgtd.tgtadm(...args, "--tid", String(volume.tid));
    if (done.code !== 0) throw new Error(`tgtadm ${args.join(" ")} --tid ${volume.tid}: ${done.stderr}`);
  }

  private answer(volume: PlayedVolume) {
    return {
      volume_id: volume.id,
      capacity_bytes: volume.bytes,
      volume_context: {
        [CSI.contextKeys.targetPortal]: this.options.tgtd.portal,
        [CSI.contextKeys.iqn]: volumeIqn(volume.id),
        [CSI.contextKeys.lun]: String(DATA_LUN),
      },
    };
  }
}
