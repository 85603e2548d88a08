import { expect } from "chai";
import type { KubeObject } from "../../../api/types.js";
import { convertObjects } from "../../../lib/convert/index.js";
import { expectGolden, goldenCases } from "../../support/golden.js";

/** What `cstor-pool convert` decides for a case: the CSPCs and notes, or only the problems. */
export function convertCase(input: unknown) {
  const items = (input as { items: KubeObject[] }).items;
  const result = convertObjects(items, "openebs");
  return result.problems.length > 0
    ? { problems: result.problems }
    : { cspcs: result.cspcs, notes: result.notes };
}

describe("convert golden cases", () => {
  for (const c of goldenCases("convert")) {
    it(`${c.name}: ${c.description}`, () => {
      expectGolden(c, "output.yaml", convertCase(c.read("input.yaml")));
    });
  }

  it("gives the same answer whatever the order of the objects", () => {
    for (const c of goldenCases("convert")) {
      const input = c.read("input.yaml") as { items: KubeObject[] };
      const reversed = convertCase({ items: [...input.items].reverse() });
      const forward = convertCase(input);
      // Problems are reported in input order; what is converted, and whether, does not depend on it.
      expect(Object.keys(reversed), c.name).to.deep.equal(Object.keys(forward));
      if ("cspcs" in forward) expect(reversed, c.name).to.deep.equal(forward);
    }
  });
});
