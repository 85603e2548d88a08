import { expect } from "chai";
import { handleCvCustomize } from "../../../hooks/cv-status/customize.js";
import { handleCvcCustomize } from "../../../hooks/cvc-sync/customize.js";
import { BadRequestError } from "../../../lib/errors.js";

const cvc = (spec: Record<string, unknown>) => ({
  controller: {},
  parent: {
    apiVersion: "openebs.io/v1alpha1",
    kind: "CStorVolumeConfig",
    metadata: { name: "pvc-1", namespace: "storage" },
    spec,
  },
});

describe("cvc-customize and cv-customize: the related objects the volume hooks read", () => {
  it("relates the namespace's pools, the Nodes, the named cluster, every replica on its pools and their budgets", () => {
    expect(
      handleCvcCustomize(cvc({ capacity: "1Gi", cstorPoolCluster: "fast", replicaCount: 3 }))
        .relatedResources,
    ).to.deep.equal([
      {
        apiVersion: "openebs.io/v1alpha1",
        resource: "cstorpoolinstances",
        namespace: "storage",
        labelSelector: {},
      },
      { apiVersion: "v1", resource: "nodes", labelSelector: {} },
      {
        apiVersion: "openebs.io/v1alpha1",
        resource: "cstorpoolclusters",
        namespace: "storage",
        names: ["fast"],
      },
      {
        apiVersion: "openebs.io/v1alpha1",
        resource: "cstorvolumereplicas",
        namespace: "storage",
        labelSelector: { matchLabels: { "openebs.io/cstor-pool-cluster": "fast" } },
      },
      {
        apiVersion: "policy/v1",
        resource: "poddisruptionbudgets",
        namespace: "storage",
        labelSelector: { matchLabels: { "openebs.io/cstor-pool-cluster": "fast" } },
      },
    ]);
  });

  it("relates a restore's source snapshot by name (its replicas are among the cluster's)", () => {
    const rules = handleCvcCustomize(
      cvc({
        capacity: "1Gi",
        cstorPoolCluster: "fast",
        replicaCount: 3,
        source: { snapshot: "snap-1", volume: "pvc-0" },
      }),
    ).relatedResources;
    expect(rules.filter((r) => r.resource === "cstorvolumesnapshots")).to.deep.equal([
      {
        apiVersion: "openebs.io/v1alpha1",
        resource: "cstorvolumesnapshots",
        namespace: "storage",
        names: ["snap-1"],
      },
    ]);
  });

  it("without a cluster name relates no cluster, replica or budget (sync then says the cluster is missing)", () => {
    expect(handleCvcCustomize(cvc({})).relatedResources.map((r) => r.resource)).to.deep.equal([
      "cstorpoolinstances",
      "nodes",
    ]);
  });

  it("relates a CStorVolume's own replicas by the volume label", () => {
    const answer = handleCvCustomize({
      controller: {},
      parent: {
        apiVersion: "openebs.io/v1alpha1",
        kind: "CStorVolume",
        metadata: { name: "pvc-1", namespace: "storage" },
      },
    });
    expect(answer.relatedResources).to.deep.equal([
      {
        apiVersion: "openebs.io/v1alpha1",
        resource: "cstorvolumereplicas",
        namespace: "storage",
        labelSelector: { matchLabels: { "cstorvolume.openebs.io/name": "pvc-1" } },
      },
    ]);
  });

  it("refuses a parent of another kind, naming it", () => {
    expect(() =>
      handleCvcCustomize({ parent: { kind: "CStorPoolCluster", metadata: { name: "x" } } }),
    ).to.throw(BadRequestError, 'request parent is a "CStorPoolCluster", this hook serves CStorVolumeConfig');
  });
});
