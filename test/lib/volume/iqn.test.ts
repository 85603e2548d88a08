// The initiator name a node logs in to volumes with (docs/adr/0047-the-csi-driver-one-writer-per-volume.md): the
// controller derives it from the node id alone, so it must be a valid iSCSI name for every Kubernetes node name.
import { expect } from "chai";
import { MAX_IQN_BYTES, nodeInitiatorIqn } from "../../../lib/volume/iqn.js";

describe("volume: a node's initiator name", () => {
  it("is the node's name under the project's IQN prefix", () => {
    expect(nodeInitiatorIqn("worker-1.example.com")).to.equal(
      "iqn.2016-09.com.openebs.cstor:node:worker-1.example.com",
    );
  });

  it("stays an iSCSI name for the longest node names, and two of them never share one", () => {
    const long = (last: string) =>
      `${"a".repeat(61)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}${last}`;
    const one = nodeInitiatorIqn(long("1"));
    const two = nodeInitiatorIqn(long("2"));
    for (const iqn of [one, two]) {
      expect(iqn.length).to.be.at.most(MAX_IQN_BYTES);
      expect(iqn).to.match(/^iqn\.2016-09\.com\.openebs\.cstor:node:[a-z0-9.-]+$/);
    }
    expect(one).not.to.equal(two);
  });
});
