// The fixture tree holds nothing no case uses, and every case holds what it needs (test/fixtures/README.md).
import { appendFileSync, cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { expect } from "chai";
import { fixtureProblems } from "../support/fixture-layout.js";
import { FIXTURES } from "../support/golden.js";

describe("fixture tree layout", () => {
  it("has no stray or orphaned file and no case missing a file", () => {
    expect(fixtureProblems(FIXTURES)).to.deep.equal([]);
  });

  describe("on a copy with one defect at a time", () => {
    let copy: string;
    before(() => {
      copy = mkdtempSync(join(tmpdir(), "fixture-layout-"));
      cpSync(FIXTURES, copy, { recursive: true });
    });
    after(() => rmSync(copy, { recursive: true, force: true }));

    /** Puts the part of the copy a defect touched back as it is in test/fixtures. */
    const restore = (part: string) => {
      rmSync(join(copy, part), { recursive: true, force: true });
      if (existsSync(join(FIXTURES, part)))
        cpSync(join(FIXTURES, part), join(copy, part), { recursive: true });
    };

    /** A defect that removes one file of a case (or of a fixed fixture directory). */
    const removing = (file: string) => ({
      make: (root: string) => rmSync(join(root, file)),
      touches: dirname(file),
    });

    const defects: { name: string; make: (root: string) => void; touches: string; problem: string }[] = [
      {
        name: "a file no case uses",
        make: (root) => writeFileSync(join(root, "cspc-sync/day2-replace/notes.txt"), "left over\n"),
        touches: "cspc-sync/day2-replace",
        problem:
          "cspc-sync/day2-replace/notes.txt: no case uses this file; remove it, or name it in test/support/golden.ts if a test reads it",
      },
      {
        name: "a file beside the areas",
        make: (root) => writeFileSync(join(root, "request.yaml"), "{}\n"),
        touches: "request.yaml",
        problem:
          "request.yaml: no case uses this file; remove it, or name it in test/support/golden.ts if a test reads it",
      },
      {
        name: "a world no case builds on",
        make: (root) =>
          cpSync(join(root, "worlds/review-create.yaml"), join(root, "worlds/review-unused.yaml")),
        touches: "worlds/review-unused.yaml",
        problem: "worlds/review-unused.yaml: a world no case builds on; remove it",
      },
      {
        name: "a case without its expected output",
        ...removing("cspi-sync/pod-not-ready/response.yaml"),
        problem:
          "cspi-sync/pod-not-ready/response.yaml: missing (UPDATE_GOLDEN=1 writes it; review it like code)",
      },
      {
        name: "a case without its input",
        ...removing("admission/create-valid/lookups.patch.yaml"),
        problem: "admission/create-valid/lookups.yaml: missing (neither lookups.yaml nor lookups.patch.yaml)",
      },
      {
        name: "a case without case.yaml",
        ...removing("cspc-finalize/step-1-mark-pools/case.yaml"),
        problem: "cspc-finalize/step-1-mark-pools: missing case.yaml",
      },
      {
        name: "a case.yaml with a misspelt key",
        make: (root) =>
          appendFileSync(
            join(root, "admission/create-lookup-timeout/case.yaml"),
            "lookupTimeoutMillis: 50\n",
          ),
        touches: "admission/create-lookup-timeout",
        problem:
          "admission/create-lookup-timeout/case.yaml: unknown keys lookupTimeoutMillis (allowed: description, now, lookupTimeoutMs, expectedLookups)",
      },
      {
        name: "a patch of a world that does not exist",
        make: (root) =>
          writeFileSync(
            join(root, "cspi-finalize/deployment-gone/request.patch.yaml"),
            "world: cspi-nowhere\n",
          ),
        touches: "cspi-finalize/deployment-gone",
        problem: `cspi-finalize/deployment-gone/request.yaml: world "cspi-nowhere" does not exist: write worlds/cspi-nowhere.yaml`,
      },
      {
        name: "a planner case without the zpool output its input names",
        ...removing("node-daemon/planner/steady-state/zpool-status.txt"),
        problem: "node-daemon/planner/steady-state/zpool-status.txt: missing, named by the case's input",
      },
      {
        name: "a fixed fixture gone",
        ...removing("render/mirror/nodes.yaml"),
        problem: "render/mirror/nodes.yaml: missing",
      },
    ];

    for (const defect of defects) {
      it(`reports ${defect.name}`, () => {
        defect.make(copy);
        try {
          expect(fixtureProblems(copy)).to.deep.equal([defect.problem]);
        } finally {
          restore(defect.touches);
        }
      });
    }

    it("reports a document written both whole and as a patch, and uses neither", () => {
      writeFileSync(join(copy, "admission/create-valid/review.yaml"), "{}\n");
      try {
        expect(fixtureProblems(copy)).to.deep.equal([
          "admission/create-valid/review.yaml: admission/create-valid: both review.yaml and review.patch.yaml exist; keep one",
          "admission/create-valid/review.patch.yaml: no case uses this file; remove it, or name it in test/support/golden.ts if a test reads it",
          "admission/create-valid/review.yaml: no case uses this file; remove it, or name it in test/support/golden.ts if a test reads it",
        ]);
      } finally {
        restore("admission/create-valid");
      }
    });

    it("and none once each defect is undone", () => {
      expect(fixtureProblems(copy)).to.deep.equal([]);
    });
  });
});
