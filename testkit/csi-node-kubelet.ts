// The kubelet of an application's node, and the attach/detach controller's part for it, played
// (docs/adr/0057-the-sidecars-test-runs-the-data-path-played-kubelets.md): what Kubernetes does for a pod's claim
// of a CSI volume on that node, called on the node plugin (csi/main.ts --mode=node in a user-mode-linux guest)
// through `client`.
//
// mount: the VolumeAttachment the attach/detach controller makes (named as it names them), once attached
// NodeStageVolume and NodePublishVolume with what the kubelet sends: the PV's volume handle, volume context and
// capability (its volumeMode, fsType, mount options and access mode), the attachment's metadata as publish
// context, the node-stage secret's data, and the kubelet's paths (under `root`: the guest's / is the host's).
// expand: NodeExpandVolume of the pod's volume to the PV's size, then the claim's status as the kubelet writes it.
// unmount: NodeUnpublishVolume, NodeUnstageVolume, and the attachment deleted. Each call is retried while it
// fails, as the kubelet retries, up to a bound; the last error is in the message then.
import { createHash, randomUUID } from "node:crypto";
import { dirname } from "node:path";
import type { ServiceError } from "@grpc/grpc-js";
import { CSI } from "../api/constants.js";
import { quantityBytes } from "../lib/quantity.js";
import type { CsiClient } from "./csi-client.js";
import { getIfPresent, waitUntil, type KubeCluster } from "./kube.js";
import { decodedSecretData } from "./node-daemon-process.js";
import type { UmlGuest } from "./uml/guest.js";

/** How long the played kubelet keeps retrying one operation (the target may still be starting in its guest). */
const RETRY_MS = 240_000;
/** Each CSI call's deadline: the kubelet's csiTimeout for the node's calls. */
const CALL_MS = 120_000;

/** The claim conditions of a resize (Kubernetes' PersistentVolumeClaimConditionType). */
const RESIZE_CONDITIONS = ["Resizing", "FileSystemResizePending", "ControllerResizeError", "NodeResizeError"];

/** A claim's volume on a pod of this node: what the kubelet remembers between mount and unmount. */
export interface PodVolume {
  namespace: string;
  claim: string;
  pv: string;
  podUid: string;
  volumeId: string;
  block: boolean;
  attachment: string;
  stagingPath: string;
  /** The pod's volume: a mounted directory, or for a block volume the device file. */
  targetPath: string;
  capability: Record<string, unknown>;
}

/** The attach/detach controller's name for the attachment of `pv` by `driver` to `node`. */
export function attachmentName(pv: string, driver: string, node: string): string {
  return `csi-${createHash("sha256").update(`${pv}${driver}${node}`).digest("hex")}`;
}

/** The CSI access mode the kubelet asks for a PV's access modes (a node without SINGLE_NODE_MULTI_WRITER). */
function accessMode(modes: readonly string[]): string {
  if (modes.includes("ReadWriteMany")) return "MULTI_NODE_MULTI_WRITER";
  if (modes.includes("ReadOnlyMany")) return "MULTI_NODE_READER_ONLY";
  return "SINGLE_NODE_WRITER";
}

export class NodeKubelet {
  constructor(
    private readonly cluster: KubeCluster,
    readonly nodeName: string,
    private readonly client: CsiClient,
    readonly guest: UmlGuest,
    /** The kubelet's root directory on the node (/var/lib/kubelet in a cluster). */
    readonly root: string,
  ) {}

  /** A pod using `claim` starts on this node: attached, staged, published. */
  async mount(namespace: string, claim: string): Promise<PodVolume> {
    const pvc = await this.required(`/api/v1/namespaces/${namespace}/persistentvolumeclaims/${claim}`);
    const pv = await this.required(`/api/v1/persistentvolumes/${pvc.spec.volumeName}`);
    const csi = pv.spec.csi;
    const volume = this.podVolume(namespace, claim, pv);
    const attached = await this.attach(volume);
    const common = {
      volume_id: volume.volumeId,
      publish_context: attached.status.attachmentMetadata ?? {},
      staging_target_path: volume.stagingPath,
      volume_capability: volume.capability,
      volume_context: csi.volumeAttributes ?? {},
    };
    // The kubelet makes the parents; the plugin makes the staging and target paths themselves.
    await this.guest.run(`mkdir -p ${dirname(volume.stagingPath)} ${dirname(volume.targetPath)}`);
    const secrets = await this.secretData(csi.nodeStageSecretRef);
    await this.retried(`NodeStageVolume of ${volume.pv}`, () =>
      this.client.call("Node", "NodeStageVolume", { ...common, secrets }, { timeoutMs: CALL_MS }),
    );
    await this.retried(`NodePublishVolume of ${volume.pv}`, () =>
      this.client.call(
        "Node",
        "NodePublishVolume",
        { ...common, target_path: volume.targetPath, readonly: false },
        { timeoutMs: CALL_MS },
      ),
    );
    return volume;
  }

  /**
   * The claim's filesystem grown on this node to its PV's size, once the claim asks for it
   * (FileSystemResizePending); then its status.capacity is the PV's and the condition goes, as the kubelet
   * writes them. Resolves with the size NodeExpandVolume answered.
   */
  async expand(volume: PodVolume): Promise<number> {
    const claimPath = `/api/v1/namespaces/${volume.namespace}/persistentvolumeclaims/${volume.claim}`;
    let pending: any;
    await waitUntil(
      async () =>
        ((pending = await getIfPresent(this.cluster, claimPath))?.status?.conditions ?? []).some(
          (c: { type: string }) => c.type === "FileSystemResizePending",
        ),
      RETRY_MS,
      () => `claim ${volume.claim} never asked for the node's expansion: ${JSON.stringify(pending?.status)}`,
    );
    const pv = await this.required(`/api/v1/persistentvolumes/${volume.pv}`);
    const size = pv.spec.capacity.storage as string;
    const expanded = await this.retried(`NodeExpandVolume of ${volume.pv} to ${size}`, () =>
      this.client.call(
        "Node",
        "NodeExpandVolume",
        {
          volume_id: volume.volumeId,
          volume_path: volume.targetPath,
          capacity_range: { required_bytes: Number(quantityBytes(size)) },
          staging_target_path: volume.stagingPath,
          volume_capability: volume.capability,
        },
        { timeoutMs: CALL_MS },
      ),
    );
    // As the kubelet's MarkFSResizeFinished: the new capacity, and no resize condition left.
    const now = await this.required(claimPath);
    const conditions = ((now.status.conditions ?? []) as { type: string }[]).filter(
      (c) => !RESIZE_CONDITIONS.includes(c.type),
    );
    const written = await this.cluster.request(
      this.cluster.admin,
      "PATCH",
      `${claimPath}/status`,
      { status: { capacity: { storage: size }, conditions, allocatedResourceStatuses: null } },
      "application/merge-patch+json",
    );
    if (written.status !== 200)
      throw new Error(`claim ${volume.claim}'s status: ${written.status} ${JSON.stringify(written.body)}`);
    return expanded.capacity_bytes ?? 0;
  }

  /** The pod is gone: unpublished, unstaged, and its attachment deleted (once gone). */
  async unmount(volume: PodVolume): Promise<void> {
    await this.retried(`NodeUnpublishVolume of ${volume.pv}`, () =>
      this.client.call(
        "Node",
        "NodeUnpublishVolume",
        { volume_id: volume.volumeId, target_path: volume.targetPath },
        { timeoutMs: CALL_MS },
      ),
    );
    await this.retried(`NodeUnstageVolume of ${volume.pv}`, () =>
      this.client.call(
        "Node",
        "NodeUnstageVolume",
        { volume_id: volume.volumeId, staging_target_path: volume.stagingPath },
        { timeoutMs: CALL_MS },
      ),
    );
    const path = `/apis/storage.k8s.io/v1/volumeattachments/${volume.attachment}`;
    await this.cluster.request(this.cluster.admin, "DELETE", path);
    await waitUntil(
      async () => (await getIfPresent(this.cluster, path)) === undefined,
      RETRY_MS,
      () => `VolumeAttachment ${volume.attachment} of ${volume.pv} was never detached`,
    );
  }

  /** The kubelet's paths and the CSI capability for `pv` in a new pod. */
  private podVolume(namespace: string, claim: string, pv: any): PodVolume {
    const csi = pv.spec.csi;
    const block = pv.spec.volumeMode === "Block";
    const name = pv.metadata.name as string;
    const podUid = randomUUID();
    const plugins = `${this.root}/plugins/kubernetes.io/csi`;
    const handle = createHash("sha256").update(csi.volumeHandle).digest("hex");
    const access_mode = { mode: accessMode(pv.spec.accessModes ?? []) };
    return {
      namespace,
      claim,
      pv: name,
      podUid,
      volumeId: csi.volumeHandle,
      block,
      attachment: attachmentName(name, csi.driver, this.nodeName),
      stagingPath: block
        ? `${plugins}/volumeDevices/staging/${name}`
        : `${plugins}/${csi.driver}/${handle}/globalmount`,
      targetPath: block
        ? `${plugins}/volumeDevices/publish/${name}/${podUid}`
        : `${this.root}/pods/${podUid}/volumes/kubernetes.io~csi/${name}/mount`,
      capability: block
        ? { block: {}, access_mode }
        : { mount: { fs_type: csi.fsType ?? "", mount_flags: pv.spec.mountOptions ?? [] }, access_mode },
    };
  }

  /** The attachment as the attach/detach controller makes it, once the attacher says it is attached. */
  private async attach(volume: PodVolume): Promise<any> {
    const path = `/apis/storage.k8s.io/v1/volumeattachments`;
    const made = await this.cluster.request(this.cluster.admin, "POST", path, {
      apiVersion: "storage.k8s.io/v1",
      kind: "VolumeAttachment",
      metadata: { name: volume.attachment },
      spec: {
        attacher: CSI.driverName,
        nodeName: this.nodeName,
        source: { persistentVolumeName: volume.pv },
      },
    });
    if (made.status !== 201 && made.status !== 409)
      throw new Error(`VolumeAttachment of ${volume.pv}: ${made.status} ${JSON.stringify(made.body)}`);
    let last: any;
    await waitUntil(
      async () => (last = await getIfPresent(this.cluster, `${path}/${volume.attachment}`))?.status?.attached,
      RETRY_MS,
      () => `${volume.pv} was never attached to ${this.nodeName}: ${JSON.stringify(last?.status)}`,
    );
    return last;
  }

  /** A Secret's data, decoded, as the kubelet hands a node-stage secret to the plugin. */
  private async secretData(
    ref: { name: string; namespace: string } | undefined,
  ): Promise<Record<string, string>> {
    if (!ref) return {};
    const secret = await this.required(`/api/v1/namespaces/${ref.namespace}/secrets/${ref.name}`);
    return decodedSecretData(secret.data ?? {});
  }

  private async required(path: string): Promise<any> {
    const object = await getIfPresent(this.cluster, path);
    if (!object) throw new Error(`the played kubelet cannot read ${path}`);
    return object;
  }

  /** `call` until it succeeds, as the kubelet retries a failed operation; throws its last error at RETRY_MS. */
  private async retried<T>(what: string, call: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + RETRY_MS;
    for (;;) {
      try {
        return await call();
      } catch (error) {
        const { code, details } = error as ServiceError;
        if (Date.now() > deadline)
          throw new Error(`${what} kept failing: code ${code}: ${details}`, { cause: error });
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
