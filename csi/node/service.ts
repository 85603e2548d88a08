// The CSI Node service (docs/adr/0047-the-csi-driver-one-writer-per-volume.md, ADR 48): each RPC's request
// checked and turned into one node operation of this folder, its failure answered with the CSI code the
// operation gave it. The node logs in through one interface record whose initiator name is derived from the
// node's name (the one ControllerPublishVolume lets the LUN admit); the volume's target, portal and LUN come
// from volume_context, its CHAP from the node-stage secret. Unstage derives the target's name from the volume id,
// so a session is found even when its disk is gone.
import { status } from "@grpc/grpc-js";
import { CSI } from "../../api/constants.js";
import { nodeInitiatorIqn, volumeIqn } from "../../lib/volume/iqn.js";
import { CsiError, invalidArgument } from "../errors.js";
import type { Message, VolumeCapability } from "../protocol.js";
import { required, unservedCapability } from "../controller/request.js";
import type { CallContext, Handlers } from "../server.js";
import { NodeOperationError } from "./errors.js";
import { expand } from "./expand.js";
import type { NodeHost } from "./host.js";
import { publish } from "./publish.js";
import type { LunAddress } from "./session.js";
import { stage, type VolumeAccess } from "./stage.js";
import { volumeStats } from "./stats.js";
import { unpublish } from "./unpublish.js";
import { unstage } from "./unstage.js";

export interface NodeServiceOptions {
  host: NodeHost;
  /** The Kubernetes Node's name: the node id, and what the node's initiator name is derived from. */
  nodeName: string;
}

/** The interface record every session of the node is made through (its initiator name: nodeInitiatorIqn). */
export const NODE_IFACE = "cstor-csi";
/**
 * How long the node's I/O waits for a lost connection to its volume's target to come back before it fails: long,
 * so that a target moving to another node (ADR 40) is a pause for the application, not an I/O error.
 */
export const NODE_REPLACEMENT_TIMEOUT_SECONDS = 120;
/** The node-stage secret's keys (a kubernetes.io/iscsi-chap Secret's). */
export const CHAP_KEYS = {
  user: "node.session.auth.username",
  password: "node.session.auth.password",
} as const;
/** A node operation's failure as the status the server answers. */
function answered(error: unknown): never {
  if (error instanceof NodeOperationError) throw new CsiError(status[error.code], error.message);
  throw error;
}

/**
 * The capability's access type: INVALID_ARGUMENT without one, FAILED_PRECONDITION for one a cStor volume does not
 * serve (the spec's "exceeds capabilities"), judged as the controller judges it.
 */
function accessOf(capability: VolumeCapability | null | undefined, volumeId: string): VolumeAccess {
  if (!capability)
    throw invalidArgument(`volume ${volumeId}: volume_capability is missing; the CO must give it`);
  const why = unservedCapability(capability);
  if (why) throw new CsiError(status.FAILED_PRECONDITION, `volume ${volumeId}: ${why}`);
  if (capability.block) return { kind: "block" };
  return {
    kind: "mount",
    fsType: capability.mount?.fs_type ?? "",
    mountFlags: capability.mount?.mount_flags ?? [],
  };
}

/** The LUN's address from volume_context (CreateVolume wrote it: ADR 47). */
function addressOf(context: Record<string, string> | undefined, volumeId: string): LunAddress {
  const keys = CSI.contextKeys;
  const missing = [keys.targetPortal, keys.iqn, keys.lun].filter((key) => !context?.[key]);
  if (missing.length > 0)
    throw invalidArgument(
      `volume ${volumeId}: volume_context lacks ${missing.join(", ")}; it is what CreateVolume answered ` +
        `(a PV made by hand must carry them as volumeAttributes)`,
    );
  const lun = Number(context![keys.lun]);
  if (!Number.isInteger(lun) || lun < 0)
    throw invalidArgument(
      `volume ${volumeId}: volume_context ${keys.lun} ${JSON.stringify(context![keys.lun])} is not a LUN number`,
    );
  return { targetIqn: context![keys.iqn], portal: context![keys.targetPortal], lun };
}

function chapOf(secrets: Record<string, string> | undefined, volumeId: string) {
  const user = secrets?.[CHAP_KEYS.user];
  const password = secrets?.[CHAP_KEYS.password];
  if (!user || !password)
    throw invalidArgument(
      `volume ${volumeId}: the node-stage secret lacks ${CHAP_KEYS.user} or ${CHAP_KEYS.password}: the ` +
        `StorageClass names the volume's CHAP Secret as csi.storage.k8s.io/node-stage-secret-name`,
    );
  return { user, password };
}

/** The node's host with waits cut to what is left of the caller's deadline (a second short of it). */
function withinDeadline(host: NodeHost, context: CallContext): NodeHost {
  if (context.deadline === undefined) return host;
  return {
    ...host,
    deviceWaitMs: Math.max(0, Math.min(host.deviceWaitMs, context.deadline - Date.now() - 1000)),
  };
}

function statsOn(host: NodeHost): Handlers<"Node">["NodeGetVolumeStats"] {
  return async (request) => {
    const volumeId = required(request.volume_id, "volume_id", "NodeGetVolumeStats");
    const volumePath = required(request.volume_path, "volume_path", "NodeGetVolumeStats");
    const found = await volumeStats(host, volumeId, volumePath).catch(answered);
    const usage: Message<"VolumeUsage">[] = found.usage.map((u) => ({ ...u }));
    return { usage, volume_condition: found.condition };
  };
}

function publishOn(host: NodeHost): Handlers<"Node">["NodePublishVolume"] {
  return async (request) => {
    const volumeId = required(request.volume_id, "volume_id", "NodePublishVolume");
    const targetPath = required(request.target_path, "target_path", "NodePublishVolume");
    const access = accessOf(request.volume_capability, volumeId);
    // The node stages (STAGE_UNSTAGE_VOLUME): a publish without a staging path is the CO's mistake.
    if (!request.staging_target_path)
      throw new CsiError(
        status.FAILED_PRECONDITION,
        `volume ${volumeId}: staging_target_path is empty; stage it first`,
      );
    const published =
      access.kind === "mount"
        ? ({ kind: "mount" } as const)
        : ({
            kind: "block",
            address: addressOf(request.volume_context, volumeId),
            iface: NODE_IFACE,
          } as const);
    const readOnly =
      request.readonly === true || request.volume_capability?.access_mode?.mode === "SINGLE_NODE_READER_ONLY";
    await publish(host, {
      volumeId,
      stagingPath: request.staging_target_path,
      targetPath,
      readOnly,
      access: published,
    }).catch(answered);
    return {};
  };
}

export function nodeService(options: NodeServiceOptions): Handlers<"Node"> {
  const { host, nodeName } = options;
  const initiatorIqn = nodeInitiatorIqn(nodeName);
  return {
    NodeStageVolume: async (request, context) => {
      const volumeId = required(request.volume_id, "volume_id", "NodeStageVolume");
      const stagingPath = required(request.staging_target_path, "staging_target_path", "NodeStageVolume");
      const access = accessOf(request.volume_capability, volumeId);
      const address = addressOf(request.volume_context, volumeId);
      const login = {
        iface: NODE_IFACE,
        initiatorIqn,
        ...chapOf(request.secrets, volumeId),
        replacementTimeoutSeconds: NODE_REPLACEMENT_TIMEOUT_SECONDS,
      };
      await stage(withinDeadline(host, context), { volumeId, stagingPath, address, login, access }).catch(
        answered,
      );
      return {};
    },
    NodeUnstageVolume: async (request) => {
      const volumeId = required(request.volume_id, "volume_id", "NodeUnstageVolume");
      const stagingPath = required(request.staging_target_path, "staging_target_path", "NodeUnstageVolume");
      const session = { targetIqn: volumeIqn(volumeId), iface: NODE_IFACE, initiatorIqn };
      await unstage(host, { volumeId, stagingPath, session }).catch(answered);
      return {};
    },
    NodePublishVolume: publishOn(host),
    NodeUnpublishVolume: async (request) => {
      const volumeId = required(request.volume_id, "volume_id", "NodeUnpublishVolume");
      const targetPath = required(request.target_path, "target_path", "NodeUnpublishVolume");
      await unpublish(host, { volumeId, targetPath }).catch(answered);
      return {};
    },
    NodeGetVolumeStats: statsOn(host),
    NodeExpandVolume: async (request, context) => {
      const volumeId = required(request.volume_id, "volume_id", "NodeExpandVolume");
      const volumePath = required(request.volume_path, "volume_path", "NodeExpandVolume");
      const requiredBytes = request.capacity_range?.required_bytes ?? 0;
      const expanded = await expand(withinDeadline(host, context), {
        volumeId,
        volumePath,
        requiredBytes,
      }).catch(answered);
      return { capacity_bytes: expanded.capacityBytes };
    },
    NodeGetCapabilities: async () => ({
      capabilities: (
        ["STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS", "EXPAND_VOLUME", "VOLUME_CONDITION"] as const
      ).map((type) => ({ rpc: { type } })),
    }),
    // No topology: a volume's target is reachable from every node (ADR 47).
    NodeGetInfo: async () => ({ node_id: nodeName }),
  };
}
