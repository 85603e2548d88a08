// cspc-sync records on each CSPI the index of its pool spec (openebs.io/pool-index), where the CSPC admission
// policy looks for the pool first (docs/adr/0046-the-cspc-policy-finds-a-cspis-pool-by-a-recorded-index.md).
import { expect } from "chai";
import { ANNOTATION } from "../../../api/constants.js";
import type { KubeObject } from "../../../api/types.js";
import { withPoolIndex } from "../../../lib/cspc/build.js";
import { blockDevice, cspcWith, node, settle, sync, type World } from "../../support/cspc-world.js";

const NODES = ["n0", "n1", "n2", "n3"];
const pool = (n: number) => ({
  nodeSelector: { "kubernetes.io/hostname": NODES[n] },
  raidGroups: [
    { type: "mirror", blockDevices: [{ blockDeviceName: `n${n}-d0` }, { blockDeviceName: `n${n}-d1` }] },
  ],
});

function world(pools: number[]): World {
  const blockDevices = NODES.flatMap((host, n) => [0, 1].map((d) => blockDevice(`n${n}-d${d}`, host)));
  return { parent: cspcWith(pools.map(pool)), cspis: [], claims: [], blockDevices, nodes: NODES.map(node) };
}

/** Each answered CSPI's node and recorded index ("-" when it records none). */
function recorded(children: KubeObject[]): Record<string, string> {
  return Object.fromEntries(
    children
      .filter((c) => c.kind === "CStorPoolInstance")
      .map((c) => [
        (c.spec as { hostName: string }).hostName,
        c.metadata.annotations?.[ANNOTATION.poolIndex] ?? "-",
      ]),
  );
}

describe("cspc-sync: the pool index recorded on each CSPI", () => {
  it("is the index of the CSPI's pool spec", () => {
    expect(recorded(settle(world([0, 1, 2])).cspis)).to.deep.equal({ n0: "0", n1: "1", n2: "2" });
  });

  it("follows a pool whose index shifts: a pool spec removed before it, then one inserted before it", () => {
    const steady = settle(world([0, 1, 2]));
    const removed = { ...steady, parent: { ...cspcWith([1, 2].map(pool), 2), status: steady.parent.status } };
    // The removed pool's CSPI is marked for removal and records no index; the others moved down by one.
    expect(recorded(sync(removed).children)).to.deep.equal({ n0: "-", n1: "0", n2: "1" });
    const inserted = {
      ...steady,
      parent: { ...cspcWith([3, 0, 1, 2].map(pool), 2), status: steady.parent.status },
    };
    // The existing CSPIs move up at once; the new pool's CSPI comes once its claims are bound.
    expect(recorded(sync(inserted).children)).to.deep.equal({ n0: "1", n1: "2", n2: "3" });
    expect(recorded(settle(inserted).cspis)).to.deep.equal({ n3: "0", n0: "1", n1: "2", n2: "3" });
  });

  it("is not written while the CSPC is paused: a frozen CSPC changes nothing of its children", () => {
    const steady = settle(world([0, 1, 2]));
    const parent = cspcWith([1, 2].map(pool), 2);
    parent.metadata.annotations = { [ANNOTATION.reconcilePaused]: "true" };
    const children = sync({ ...steady, parent: { ...parent, status: steady.parent.status } }).children;
    expect(recorded(children)).to.deep.equal({ n0: "0", n1: "1", n2: "2" });
  });
});

describe("withPoolIndex", () => {
  const cspi: KubeObject = {
    apiVersion: "openebs.io/v1alpha1",
    kind: "CStorPoolInstance",
    metadata: { name: "p", annotations: { other: "kept", [ANNOTATION.poolIndex]: "7" } },
  };

  it("records the index as a string, keeping the other annotations", () => {
    expect(withPoolIndex(cspi, 3).metadata.annotations).to.deep.equal({
      other: "kept",
      [ANNOTATION.poolIndex]: "3",
    });
  });

  it("drops the index for a CSPI no pool spec claims, and an annotations map left empty", () => {
    expect(withPoolIndex(cspi, undefined).metadata.annotations).to.deep.equal({ other: "kept" });
    const only = { ...cspi, metadata: { name: "p", annotations: { [ANNOTATION.poolIndex]: "0" } } };
    expect(withPoolIndex(only, undefined).metadata).to.deep.equal({ name: "p" });
  });

  it("leaves the CSPI it is given as it was", () => {
    withPoolIndex(cspi, 1);
    expect(cspi.metadata.annotations?.[ANNOTATION.poolIndex]).to.equal("7");
  });
});
