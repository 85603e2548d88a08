// The test network's addresses: a chaos run boots a spare guest for every target move, so guests must never
// take a pool pod's address (a guest at 10.200.x.20 made pool pod 0 and the new target unreachable).
import { expect } from "chai";
import { TestNetwork } from "../../testkit/uml/network.js";

describe("UML test network addresses", () => {
  let network: TestNetwork;
  before(async () => {
    network = await TestNetwork.create();
  });
  after(() => network.close());

  it("gives guests and pods apart ranges, and refuses an address out of its range instead of sharing one", () => {
    const pods = Array.from({ length: 80 }, (_, i) => network.podAddress(20 + i));
    const guests = Array.from({ length: 145 }, (_, i) => network.guestAddress(i + 1));
    const all = [network.hostAddress, network.serviceAddress(), ...pods, ...guests];
    expect(new Set(all).size, "every address once").to.equal(all.length);
    expect(() => network.guestAddress(146)).to.throw(/not in 1-145/);
    expect(() => network.podAddress(100)).to.throw(/not in 20-99/);
  });
});
