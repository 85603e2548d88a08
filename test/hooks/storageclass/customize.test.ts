import { readFileSync } from "node:fs";
import { expect } from "chai";
import { parse } from "yaml";
import { handleStorageClassCustomize } from "../../../hooks/storageclass/customize.js";
import { BadRequestError } from "../../../lib/errors.js";
import { repoPath } from "../../../testkit/kube.js";

const SAMPLE = parse(
  readFileSync(repoPath("metacontroller/samples/volumes/storageclass-cstor.yaml"), "utf8"),
) as Record<string, any>;
const withParameters = (parameters: Record<string, string>) => ({ parent: { ...SAMPLE, parameters } });

describe("storageclass-customize", () => {
  it("asks for every PVC, the class's CStorPoolCluster by name and the CStorVolumes beside it", () => {
    expect(handleStorageClassCustomize({ parent: SAMPLE }).relatedResources).to.deep.equal([
      { apiVersion: "v1", resource: "persistentvolumeclaims", labelSelector: {} },
      {
        apiVersion: "openebs.io/v1alpha1",
        resource: "cstorpoolclusters",
        namespace: "openebs",
        names: ["cstor-pool-mirror"],
      },
      {
        apiVersion: "openebs.io/v1alpha1",
        resource: "cstorvolumes",
        namespace: "openebs",
        labelSelector: {},
      },
    ]);
  });

  it("looks in the namespace a class names with <namespace>/<name>", () => {
    const rules = handleStorageClassCustomize(
      withParameters({ cstorPoolCluster: "storage/fast", replicaCount: "1" }),
    ).relatedResources;
    expect(rules.slice(1).map((r) => [r.resource, r.namespace])).to.deep.equal([
      ["cstorpoolclusters", "storage"],
      ["cstorvolumes", "storage"],
    ]);
  });

  it("asks only for PVCs when the class's parameters are refused (the sync says why on each)", () => {
    expect(handleStorageClassCustomize(withParameters({ replicaCount: "3" })).relatedResources).to.deep.equal(
      [{ apiVersion: "v1", resource: "persistentvolumeclaims", labelSelector: {} }],
    );
  });

  it("refuses a parent that is not a StorageClass", () => {
    expect(() => handleStorageClassCustomize({ parent: { ...SAMPLE, kind: "ConfigMap" } })).to.throw(
      BadRequestError,
      /this hook serves StorageClass/,
    );
  });
});
