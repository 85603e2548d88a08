// The volume target's snapshot pass, PLAYED (docs/adr/0050-a-snapshot-is-taken-while-md-holds-the-volumes-writes.md),
// for worlds where no volume target runs: the CSI world has no target pods (its kubelet and NDM are played too,
// testkit/kube.ts). Nothing is held and no ZFS snapshot is taken here; the player writes on each CStorVolumeSnapshot
// what a target writes once every replica's pool reported the snapshot, so the CSI controller and the
// external-snapshotter are tested against the objects' contract:
// - a Pending snapshot of one of the world's volumes becomes ReadyToUse: creationTime now, restoreSize the volume's
//   capacity, replicas its CStorVolumeReplicas; or Failed with a reason, for a name the test said fails;
// - a Failed one is tried again (as the target does after its back-off) once the test no longer says it fails;
// - a deleted one loses the finalizer cstor.openebs.io/replica-snapshots (as once no pool holds it any more).
import { API_VERSION, CSI, FINALIZER, LABEL } from "../api/constants.js";
import type { CVC, CVR, CVSnap } from "../api/types.js";
import { getIfPresent, type KubeCluster } from "./kube.js";

const MERGE = "application/merge-patch+json";

export class SnapshotPlayer {
  private readonly failures = new Map<string, string>();

  /** Plays for the snapshots of volumes on the pools of `cspc`, in `namespace`. */
  constructor(
    private readonly cluster: KubeCluster,
    private readonly namespace: string,
    private readonly cspc: string,
  ) {}

  /** The snapshot of this name fails with this reason (as when replicas did not answer), until told otherwise. */
  failSnapshot(name: string, reason: string): void {
    this.failures.set(name, reason);
  }

  /** The snapshot of this name is taken again at the next pass. */
  stopFailing(name: string): void {
    this.failures.delete(name);
  }

  /** One pass over the driver's snapshots; a write that fails is the next pass's to do. */
  async round(): Promise<void> {
    const selector = encodeURIComponent(`${LABEL.managedBy}=${CSI.driverName}`);
    const cvsnaps = ((
      await getIfPresent(this.cluster, `${this.path("cstorvolumesnapshots")}?labelSelector=${selector}`)
    )?.items ?? []) as CVSnap[];
    for (const cvsnap of cvsnaps) {
      const cvc = (await getIfPresent(this.cluster, this.path("cstorvolumeconfigs", cvsnap.spec.volume))) as
        CVC | undefined;
      if (cvc?.spec.cstorPoolCluster !== this.cspc) continue;
      if (cvsnap.metadata.deletionTimestamp) await this.release(cvsnap);
      else if (cvsnap.status?.phase !== "ReadyToUse") await this.take(cvsnap, cvc);
    }
  }

  private async take(cvsnap: CVSnap, cvc: CVC): Promise<void> {
    const failure = this.failures.get(cvsnap.metadata.name!);
    if (failure && cvsnap.status?.phase === "Failed") return;
    const selector = encodeURIComponent(`${LABEL.replicaVolume}=${cvsnap.spec.volume}`);
    const replicas = ((
      await getIfPresent(this.cluster, `${this.path("cstorvolumereplicas")}?labelSelector=${selector}`)
    )?.items ?? []) as CVR[];
    const status = failure
      ? { phase: "Failed", reason: "ReplicasDidNotAnswer", message: failure }
      : {
          phase: "ReadyToUse",
          creationTime: new Date().toISOString(),
          restoreSize: cvc.spec.capacity,
          replicas: replicas.map((r) => r.metadata.name!).sort(),
          reason: null,
          message: null,
        };
    await this.patch(`${this.path("cstorvolumesnapshots", cvsnap.metadata.name)}/status`, { status });
  }

  private async release(cvsnap: CVSnap): Promise<void> {
    const finalizers = cvsnap.metadata.finalizers ?? [];
    if (!finalizers.includes(FINALIZER.replicaSnapshots)) return;
    await this.patch(this.path("cstorvolumesnapshots", cvsnap.metadata.name), {
      metadata: {
        resourceVersion: cvsnap.metadata.resourceVersion,
        finalizers: finalizers.filter((f) => f !== FINALIZER.replicaSnapshots),
      },
    });
  }

  private async patch(path: string, body: object): Promise<void> {
    const response = await this.cluster.request(this.cluster.admin, "PATCH", path, body, MERGE);
    if (response.status !== 200)
      throw new Error(
        `the played target's PATCH ${path}: ${response.status} ${JSON.stringify(response.body)}`,
      );
  }

  private path(plural: string, name?: string): string {
    return `/apis/${API_VERSION}/namespaces/${this.namespace}/${plural}${name ? `/${name}` : ""}`;
  }
}
