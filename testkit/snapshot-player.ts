// The volume target's snapshot pass, PLAYED (docs/adr/0050-a-snapshot-is-taken-while-md-holds-the-volumes-writes.md),
// for worlds where no volume target runs: the CSI world has no target pods (its kubelet and NDM are played too,
// testkit/kube.ts). Nothing is held (there is no array); the player writes on the replicas and each
// CStorVolumeSnapshot what a target writes, and the world's real node daemons take and destroy the ZFS snapshots,
// so the CSI controller, the external-snapshotter and restores' clones are tested against the objects' contract:
// - a Pending snapshot of one of the world's volumes is asked of every replica (its name added to
//   cstor.openebs.io/snapshots, and cstor.openebs.io/snapshot-now), and becomes ReadyToUse once every replica's
//   status lists it: creationTime now, restoreSize the volume's capacity, replicas its CStorVolumeReplicas; or
//   Failed with a reason, for a name the test said fails;
// - a Failed one is tried again (as the target does after its back-off) once the test no longer says it fails;
// - a deleted one leaves every replica's list, and loses the finalizer cstor.openebs.io/replica-snapshots once no
//   replica's status lists it.
import { ANNOTATION, API_VERSION, CSI, FINALIZER, LABEL } from "../api/constants.js";
import { snapshotListEntries, snapshotListValue } from "../lib/volume/replica-snapshots.js";
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
    const name = cvsnap.metadata.name!;
    const failure = this.failures.get(name);
    if (failure) {
      if (cvsnap.status?.phase !== "Failed")
        await this.writeStatus(cvsnap, { phase: "Failed", reason: "ReplicasDidNotAnswer", message: failure });
      return;
    }
    const replicas = await this.replicasOf(cvsnap.spec.volume);
    const unasked = replicas.filter((r) => !listed(r).includes(name));
    for (const replica of unasked) await this.annotate(replica, [...listed(replica), name], name);
    if (unasked.length > 0 || !replicas.every((r) => holds(r, name))) return;
    await this.writeStatus(cvsnap, {
      phase: "ReadyToUse",
      creationTime: new Date().toISOString(),
      restoreSize: cvc.spec.capacity,
      replicas: replicas.map((r) => r.metadata.name!).sort(),
      reason: null,
      message: null,
    });
    for (const replica of replicas) await this.annotate(replica, listed(replica), null);
  }

  /** Drops the snapshot from its replicas' lists; once no pool holds it, its finalizer. */
  private async release(cvsnap: CVSnap): Promise<void> {
    const name = cvsnap.metadata.name!;
    const finalizers = cvsnap.metadata.finalizers ?? [];
    if (!finalizers.includes(FINALIZER.replicaSnapshots)) return;
    const replicas = await this.replicasOf(cvsnap.spec.volume);
    for (const replica of replicas.filter((r) => listed(r).includes(name)))
      await this.annotate(
        replica,
        listed(replica).filter((n) => n !== name),
        null,
      );
    if (replicas.some((r) => holds(r, name))) return;
    await this.patch(this.path("cstorvolumesnapshots", name), {
      metadata: {
        resourceVersion: cvsnap.metadata.resourceVersion,
        finalizers: finalizers.filter((f) => f !== FINALIZER.replicaSnapshots),
      },
    });
  }

  private async replicasOf(volume: string): Promise<CVR[]> {
    const selector = encodeURIComponent(`${LABEL.replicaVolume}=${volume}`);
    return ((
      await getIfPresent(this.cluster, `${this.path("cstorvolumereplicas")}?labelSelector=${selector}`)
    )?.items ?? []) as CVR[];
  }

  /** The replica's snapshot list, and the snapshot its pool is to take now (null: none), as a target writes them. */
  private async annotate(replica: CVR, names: readonly string[], now: string | null): Promise<void> {
    await this.patch(this.path("cstorvolumereplicas", replica.metadata.name), {
      metadata: {
        annotations: {
          [ANNOTATION.replicaSnapshots]: snapshotListValue(names),
          [ANNOTATION.snapshotNow]: now,
        },
      },
    });
  }

  private async writeStatus(cvsnap: CVSnap, status: Record<string, unknown>): Promise<void> {
    await this.patch(`${this.path("cstorvolumesnapshots", cvsnap.metadata.name)}/status`, { status });
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

/** The snapshots the replica's list names. */
function listed(replica: CVR): string[] {
  return snapshotListEntries(replica.metadata.annotations) ?? [];
}

/** The replica's pool reported the snapshot. */
function holds(replica: CVR, name: string): boolean {
  return replica.status?.snapshots?.some((s) => s.name === name) === true;
}
