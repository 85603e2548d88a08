import { isDeepStrictEqual } from "node:util";
import { expect } from "chai";
import { DEFAULTS } from "../../../api/constants.js";
import { handleCvcSync } from "../../../hooks/cvc-sync/sync.js";
import { handleCvStatus } from "../../../hooks/cv-status/sync.js";
import { handleCvcFinalize } from "../../../hooks/finalize/cvc.js";
import { canonicalize } from "../../../lib/canonical.js";
import { TEST_HOOK_CONFIG } from "../../../testkit/hook-config.js";
import { caseHookConfig, expectGolden, goldenCases } from "../../support/golden.js";
import { applyUpdate, LAST_APPLIED, type Obj } from "../../../testkit/metacontroller-driver.js";

describe("cvc-sync golden cases", () => {
  for (const c of goldenCases("cvc-sync")) {
    it(`${c.name}: ${c.description}`, () => {
      expectGolden(
        c,
        "response.yaml",
        handleCvcSync(c.read("request.yaml"), () => c.now, caseHookConfig(c)),
      );
    });
  }
});

describe("cvc-finalize golden cases", () => {
  for (const c of goldenCases("cvc-finalize")) {
    it(`${c.name}: ${c.description}`, () => {
      expectGolden(
        c,
        "response.yaml",
        handleCvcFinalize(c.read("request.yaml"), () => c.now),
      );
    });
  }
});

describe("cv-status golden cases", () => {
  for (const c of goldenCases("cv-status")) {
    it(`${c.name}: ${c.description}`, () => {
      expectGolden(
        c,
        "response.yaml",
        handleCvStatus(c.read("request.yaml"), () => c.now),
      );
    });
  }
});

describe("cv-status until its status is seen", () => {
  it("asks for a resync within seconds while the status it answers is not the one it was sent, and none once it is (a status write given up on a conflict with the target agent is written again)", () => {
    for (const c of goldenCases("cv-status")) {
      const request = structuredClone(c.read("request.yaml")) as { object: { status?: unknown } };
      const sent = structuredClone(request.object.status ?? {});
      const first = handleCvStatus(request, () => c.now);
      request.object.status = structuredClone(first.status);
      const second = handleCvStatus(request, () => c.now);
      expect(canonicalize(second.status), c.name).to.deep.equal(canonicalize(first.status));
      expect(second.resyncAfterSeconds, `${c.name}: seen`).to.equal(undefined);
      const changed = !isDeepStrictEqual(canonicalize(sent), canonicalize(first.status));
      expect(first.resyncAfterSeconds, c.name).to.equal(changed ? DEFAULTS.confirmResyncSeconds : undefined);
    }
  });
});

describe("cvc-sync at rest", () => {
  it("bound-healthy is a fixed point: Metacontroller would change no child and write the same status", () => {
    const c = goldenCases("cvc-sync").find((x) => x.name === "bound-healthy")!;
    const request = c.read("request.yaml") as {
      parent: { status: unknown };
      children: Record<string, Record<string, Obj>>;
    };
    const response = handleCvcSync(request, () => c.now, TEST_HOOK_CONFIG);
    const observed = new Map(
      Object.values(request.children)
        .flatMap((byName) => Object.values(byName))
        .map((o) => [`${o.kind}/${o.metadata.name}`, o]),
    );
    expect(response.children.map((child) => `${child.kind}/${child.metadata.name}`).sort()).to.deep.equal(
      [...observed.keys()].sort(),
    );
    for (const child of response.children) {
      const current = observed.get(`${child.kind}/${child.metadata.name}`)!;
      // The world's objects carry no last-applied annotation; everything else must come out unchanged.
      const merged = applyUpdate(current, child);
      delete merged.metadata.annotations?.[LAST_APPLIED];
      if (merged.metadata.annotations && Object.keys(merged.metadata.annotations).length === 0)
        delete merged.metadata.annotations;
      expect(merged, `${child.kind}/${child.metadata.name}`).to.deep.equal(current);
    }
    expect(canonicalize({ ...response.status, observedGeneration: 1 })).to.deep.equal(
      canonicalize(request.parent.status),
    );
  });
});
