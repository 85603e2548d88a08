import { handleCspiSync } from "../../../hooks/cspi-sync/sync.js";
import { DEFAULT_HOOK_CONFIG } from "../../../lib/hook-config.js";
import { expectGolden, goldenCases } from "../../support/golden.js";

describe("cspi-sync golden cases", () => {
  for (const c of goldenCases("cspi-sync")) {
    it(`${c.name}: ${c.description}`, () => {
      expectGolden(
        c,
        "response.yaml",
        handleCspiSync(c.read("request.yaml"), () => c.now, DEFAULT_HOOK_CONFIG),
      );
    });
  }
});
