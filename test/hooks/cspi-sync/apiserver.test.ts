// The pool Deployment against a real kube-apiserver: it is accepted as written, and what the server stores
// contains every field exactly as the hook wrote it. That is what keeps Metacontroller's 3-way merge from
// updating the Deployment on every sync (defaults the server would add, quantities it would respell).
import { expect } from "chai";
import type { KubeObject } from "../../../api/types.js";
import { DEFAULT_HOOK_CONFIG } from "../../../lib/hook-config.js";
import { isApplied } from "../../../lib/cspi/deployment.js";
import { handleCspiSync } from "../../../hooks/cspi-sync/sync.js";
import { canonicalize } from "../../../lib/canonical.js";
import { goldenCases } from "../../support/golden.js";
import { kubeCluster, type KubeCluster } from "../../../testkit/kube.js";
import { expectContained } from "../../support/contained.js";

const NAMESPACE = "cspi-sync-deployments";

function desiredDeployment(caseName: string): KubeObject & { spec: any } {
  const c = goldenCases("cspi-sync").find((x) => x.name === caseName)!;
  const response = handleCspiSync(c.read("request.yaml"), () => c.now, DEFAULT_HOOK_CONFIG);
  const deployment = canonicalize(response.attachments[0]) as KubeObject & { spec: any };
  deployment.metadata.namespace = NAMESPACE;
  return deployment;
}

describe("pool Deployments on a real kube-apiserver", function () {
  // The first integration test of a run starts etcd and the API server (and on a fresh machine builds it).
  this.timeout(25 * 60_000);
  let kube: KubeCluster;

  before(async () => {
    kube = await kubeCluster();
    await kube.kubectl(["create", "namespace", NAMESPACE]);
  });

  async function create(deployment: KubeObject): Promise<KubeObject & { spec: any }> {
    return JSON.parse(
      (await kube.kubectl(["create", "-f", "-", "-o", "json"], { input: JSON.stringify(deployment) })).stdout,
    );
  }

  for (const c of goldenCases("cspi-sync")) {
    it(`${c.name}: stored exactly as written`, async () => {
      const desired = desiredDeployment(c.name);
      desired.metadata.name = c.name;
      const stored = await create(desired);
      expectContained(desired, stored);
      expect(isApplied(desired, stored), "applied: the hook asks for no short resync").to.equal(true);
    });
  }

  it("a node move updates the same Deployment (the selector is immutable and unchanged) and rolls its pod", async () => {
    const before = desiredDeployment("seed-4-mirror-pool-1");
    before.metadata.name = "moving-pool";
    const stored = await create(before);
    const after = desiredDeployment("rollout-node-changed-permitted");
    // What Metacontroller's in-place update sends: the stored object with the hook's fields applied.
    const updated = {
      ...stored,
      metadata: { ...stored.metadata, labels: after.metadata.labels },
      spec: after.spec,
    };
    const replaced = JSON.parse(
      (await kube.kubectl(["replace", "-f", "-", "-o", "json"], { input: JSON.stringify(updated) })).stdout,
    );
    expect(replaced.metadata.generation).to.equal((stored.metadata.generation ?? 0) + 1);
    expect(replaced.spec.template.spec.nodeSelector).to.deep.equal({
      "kubernetes.io/hostname": "gke-cstor-it-default-pool-3",
    });
    expectContained({ spec: after.spec }, replaced);
  });
});
