// The daemon's replica series: the consistency factor beside each replica counts every live CVR of the
// volume, on any pool, as the daemon's CVR view holds them by volume. The pool's snapshot series.
import { expect } from "chai";
import { KIND, LABEL } from "../../api/constants.js";
import type { CVR } from "../../api/types.js";
import { createMetrics } from "../../node-daemon/metrics.js";
import { planInputOf, plannerCase } from "../support/planner-cases.js";

const cvr = (name: string, pool: string, volume: string, deleting = false): CVR => ({
  apiVersion: "openebs.io/v1alpha1",
  kind: KIND.cvr,
  metadata: {
    name,
    namespace: "openebs",
    labels: { [LABEL.replicaPool]: pool, [LABEL.replicaVolume]: volume },
    ...(deleting ? { deletionTimestamp: "2026-03-01T12:00:00Z" } : {}),
  },
  spec: { capacity: "1Gi", replicaId: name },
});

describe("node-daemon replica metrics", () => {
  it("the consistency factor of a volume counts its live replicas on every pool, not only this one", async () => {
    const metrics = createMetrics();
    const ours = cvr("vol-1-a", "pool-a", "vol-1");
    const byVolume: Record<string, CVR[]> = {
      "vol-1": [
        ours,
        cvr("vol-1-b", "pool-b", "vol-1"),
        cvr("vol-1-c", "pool-c", "vol-1"),
        cvr("vol-1-d", "pool-d", "vol-1"),
        cvr("vol-1-e", "pool-e", "vol-1", true),
      ],
    };
    metrics.replicas(
      "pool-a",
      [ours],
      { "vol-1-a": { phase: "Healthy" } },
      (volume) => byVolume[volume] ?? [],
    );
    const text = await metrics.registry.metrics();
    expect(text).to.include(
      'cstor_volume_consistency_factor{cspi="pool-a",pool="cstor-pool-a",volume="vol-1"} 3',
    );
    expect(text).to.include(
      'cstor_volume_replica_healthy{cspi="pool-a",pool="cstor-pool-a",volume="vol-1"} 1',
    );
  });

  it("counts the pool's snapshots, deferred ones included, and the bytes they alone hold", async () => {
    const metrics = createMetrics();
    const input = planInputOf(plannerCase("steady-state"));
    const observation = structuredClone(input.observation);
    const snapshot = (name: string, deferred: string) => ({
      dataset: "cstor-pool-a1b2c3/pvc-1",
      name,
      properties: { type: "snapshot", defer_destroy: deferred },
    });
    observation.pool!.snapshots = [snapshot("snap-1", "off"), snapshot("snap-0", "on")];
    observation.pool!.snapshotBytes = 3 * 2 ** 20;
    metrics.passed({ cspi: input.cspi, seconds: 0.1, now: input.now, observation });
    const text = await metrics.registry.metrics();
    const labels = `cspi="${input.cspi.metadata.name}",pool="cstor-${input.cspi.metadata.name}"`;
    expect(text).to.include(`cstor_pool_snapshots{${labels}} 2`);
    expect(text).to.include(`cstor_pool_snapshot_used_bytes{${labels}} ${3 * 2 ** 20}`);
  });
});
