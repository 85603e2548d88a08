import { expect } from "chai";
import { API_VERSION, KIND } from "../../../api/constants.js";
import { handleCspiCustomize } from "../../../hooks/cspi-sync/customize.js";

const request = (spec: unknown) => ({
  controller: {},
  parent: { apiVersion: API_VERSION, kind: KIND.cspi, metadata: { name: "p", namespace: "openebs" }, spec },
});

describe("cspi-customize: a pool's sync is sent its own node's Lease, nothing of other nodes", () => {
  it("asks for the node daemon Lease labelled with the CSPI's hostName, in the CSPI's namespace", () => {
    expect(handleCspiCustomize(request({ hostName: "node-7" })).relatedResources).to.deep.equal([
      {
        apiVersion: "coordination.k8s.io/v1",
        resource: "leases",
        namespace: "openebs",
        labelSelector: {
          matchLabels: {
            "app.kubernetes.io/component": "node-daemon",
            "app.kubernetes.io/name": "cstor-pool-node",
            "kubernetes.io/hostname": "node-7",
          },
        },
      },
    ]);
  });

  it("asks for more, never less, when the stored CSPI has no readable hostName: every node daemon's Lease", () => {
    for (const spec of [undefined, {}, { hostName: 7 }, { hostName: "" }])
      expect(handleCspiCustomize(request(spec)).relatedResources.map((r) => r.labelSelector)).to.deep.equal([
        {
          matchLabels: {
            "app.kubernetes.io/component": "node-daemon",
            "app.kubernetes.io/name": "cstor-pool-node",
          },
        },
      ]);
  });
});
