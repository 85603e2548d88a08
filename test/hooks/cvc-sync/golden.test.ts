import { syncCvc } from "../../../hooks/cvc-sync/sync.js";
import { syncCvStatus } from "../../../hooks/cv-status/sync.js";
import { finalizeCvc } from "../../../hooks/finalize/cvc.js";
import { DEFAULT_HOOK_CONFIG } from "../../../lib/hook-config.js";
import { expectGolden, goldenCases } from "../../support/golden.js";

describe("cvc-sync golden cases", () => {
  for (const c of goldenCases("cvc-sync")) {
    it(`${c.name}: ${c.description}`, () => {
      expectGolden(c, "response.yaml", syncCvc(c.read("request.yaml"), () => c.now, DEFAULT_HOOK_CONFIG));
    });
  }
});

describe("cvc-finalize golden cases", () => {
  for (const c of goldenCases("cvc-finalize")) {
    it(`${c.name}: ${c.description}`, () => {
      expectGolden(c, "response.yaml", finalizeCvc(c.read("request.yaml"), () => c.now));
    });
  }
});

describe("cv-status golden cases", () => {
  for (const c of goldenCases("cv-status")) {
    it(`${c.name}: ${c.description}`, () => {
      expectGolden(c, "response.yaml", syncCvStatus(c.read("request.yaml"), () => c.now));
    });
  }
});
