// The claims cspc-sync returns are merged from several steps with one precedence: the answer must not depend
// on the order in which the steps run or list their wants, and no wanted claim may go missing.
import { expect } from "chai";
import fc from "fast-check";
import { ANNOTATION, LABEL, TYPE_KEY } from "../../../api/constants.js";
import type { KubeObject } from "../../../api/types.js";
import {
  CLAIM_PRECEDENCE,
  claimsOfReplacedDevices,
  mergeClaims,
  type ClaimPart,
  type ClaimSource,
  type ClaimWant,
} from "../../../lib/cspc/claims.js";
import { buildInventory } from "../../../lib/inventory.js";

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
  );
}

describe("cspc-sync claims: one merge with a fixed precedence", () => {
  it("a device wanted by several steps with different content gets the content of the step first in CLAIM_PRECEDENCE, whatever the order of the steps", () => {
    const parts: ClaimPart[] = [
      { source: "replacedDevice", wants: [{ device: "d1", cspi: "pool-c" }] },
      { source: "listedByCspi", wants: [{ device: "d1", cspi: "pool-b" }] },
      { source: "dayTwo", wants: [{ device: "d1", cspi: "pool-a", predecessor: "d0" }] },
      { source: "heldWhileFrozen", wants: [{ device: "d1", cspi: "" }] },
    ];
    for (const order of permutations(parts)) {
      expect(mergeClaims(order).get("d1"), order.map((p) => p.source).join(", ")).to.deep.equal({
        device: "d1",
        cspi: "pool-a",
        predecessor: "d0",
      });
    }
  });

  it("for any wants: every wanted device is kept, with the content of its highest-precedence step, and the order of the steps does not matter", () => {
    const want = fc.record({
      device: fc.constantFrom("d1", "d2", "d3", "d4"),
      cspi: fc.constantFrom("pool-a", "pool-b", ""),
      predecessor: fc.option(fc.constantFrom("d0", "d9"), { nil: undefined }),
    });
    const part = fc.record({
      source: fc.constantFrom(...CLAIM_PRECEDENCE),
      wants: fc.array(want, { maxLength: 5 }),
    });
    const steps = fc
      .uniqueArray(part, { selector: (p) => p.source, maxLength: CLAIM_PRECEDENCE.length })
      .chain((parts) =>
        fc.tuple(
          fc.constant(parts),
          fc.shuffledSubarray(parts, { minLength: parts.length, maxLength: parts.length }),
        ),
      );
    fc.assert(
      fc.property(steps, ([parts, shuffled]) => {
        const merged = mergeClaims(parts);
        expect(Object.fromEntries(mergeClaims(shuffled))).to.deep.equal(Object.fromEntries(merged));
        const wanted = new Set(parts.flatMap((p) => p.wants.map((w) => w.device)));
        expect(new Set(merged.keys())).to.deep.equal(wanted);
        for (const [device, chosen] of merged) {
          const winner = CLAIM_PRECEDENCE.find((s: ClaimSource) =>
            parts.some((p) => p.source === s && p.wants.some((w) => w.device === device)),
          );
          const first = parts
            .find((p) => p.source === winner)!
            .wants.find((w: ClaimWant) => w.device === device);
          expect(chosen).to.deep.equal(first);
        }
      }),
    );
  });

  it("keeps every device down a chain of replacements whose last successor is kept, whatever the order of the claims", () => {
    // d3 replaces d2, which (its resilver not yet confirmed) replaced d1: d1 and d2 may both still hold data.
    const claim = (device: string, predecessor: string): KubeObject => ({
      apiVersion: "openebs.io/v1alpha1",
      kind: "BlockDeviceClaim",
      metadata: {
        name: `bdc-${device}`,
        namespace: "openebs",
        labels: { [LABEL.cspi]: "pool-a" },
        annotations: { [ANNOTATION.bdPredecessor]: predecessor },
      },
      spec: { blockDeviceName: device },
    });
    const cspc: KubeObject = {
      apiVersion: "openebs.io/v1alpha1",
      kind: "CStorPoolCluster",
      metadata: { name: "c", namespace: "openebs" },
    };
    for (const order of permutations([claim("d3", "d2"), claim("d2", "d1")])) {
      const children = {
        [TYPE_KEY.blockDeviceClaim]: Object.fromEntries(order.map((c) => [`openebs/${c.metadata.name}`, c])),
      };
      const inventory = buildInventory(cspc, children, {});
      const wants = claimsOfReplacedDevices(inventory, new Set(["d3"]));
      expect(wants.map((w) => `${w.device}@${w.cspi}`).sort()).to.deep.equal(["d1@pool-a", "d2@pool-a"]);
    }
  });
});
