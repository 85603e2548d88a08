import { expect } from "chai";
import { API_VERSION, KIND } from "../../../api/constants.js";
import { handleCspcCustomize } from "../../../hooks/cspc-sync/customize.js";

const request = (spec: unknown) => ({
  controller: {},
  parent: { apiVersion: API_VERSION, kind: KIND.cspc, metadata: { name: "c", namespace: "openebs" }, spec },
});
const rulesFor = (spec: unknown, resource: string) =>
  handleCspcCustomize(request(spec)).relatedResources.filter((r) => r.resource === resource);
const raidPool = (host: string) => ({
  nodeSelector: { "kubernetes.io/hostname": host },
  raidGroups: [{ type: "stripe", blockDevices: [{ blockDeviceName: `bd-${host}` }] }],
});

describe("cspc-customize: what a sync is sent grows with the CSPC, not with the cluster", () => {
  it("asks for the nodes each pool's nodeSelector selects, once per distinct selector, and no PersistentVolume", () => {
    const spec = { pools: [raidPool("n2"), raidPool("n1"), raidPool("n2")] };
    expect(rulesFor(spec, "nodes")).to.deep.equal([
      {
        apiVersion: "v1",
        resource: "nodes",
        labelSelector: { matchLabels: { "kubernetes.io/hostname": "n1" } },
      },
      {
        apiVersion: "v1",
        resource: "nodes",
        labelSelector: { matchLabels: { "kubernetes.io/hostname": "n2" } },
      },
    ]);
    expect(rulesFor(spec, "persistentvolumes")).to.deep.equal([]);
  });

  it("asks for every node and every PersistentVolume when a pool on device sets has no nodeSelector (its PVs place it)", () => {
    const spec = { pools: [raidPool("n1"), { deviceSets: [{ name: "data", count: 3 }] }] };
    expect(rulesFor(spec, "nodes")).to.deep.equal([
      { apiVersion: "v1", resource: "nodes", labelSelector: {} },
    ]);
    expect(rulesFor(spec, "persistentvolumes")).to.deep.equal([
      { apiVersion: "v1", resource: "persistentvolumes", labelSelector: {} },
    ]);
  });

  it("asks for more, never less, when the stored spec is not what it expects", () => {
    for (const spec of [
      undefined,
      { pools: "x" },
      { pools: [null] },
      { pools: [{ nodeSelector: { a: 1 } }] },
    ]) {
      expect(rulesFor(spec, "nodes"), JSON.stringify(spec)).to.deep.equal([
        { apiVersion: "v1", resource: "nodes", labelSelector: {} },
      ]);
    }
    expect(rulesFor({ pools: [null] }, "persistentvolumes")).to.have.length(1);
  });
});
