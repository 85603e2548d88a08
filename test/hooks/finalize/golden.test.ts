import { DEFAULT_HOOK_CONFIG } from "../../../lib/hook-config.js";
import { handleCspcFinalize } from "../../../hooks/finalize/cspc.js";
import { handleCspiFinalize } from "../../../hooks/finalize/cspi.js";
import { expectGolden, goldenCases } from "../../support/golden.js";

describe("cspc-finalize golden cases", () => {
  for (const c of goldenCases("cspc-finalize")) {
    it(`${c.name}: ${c.description}`, () => {
      expectGolden(
        c,
        "response.yaml",
        handleCspcFinalize(c.read("request.yaml"), () => c.now, DEFAULT_HOOK_CONFIG),
      );
    });
  }
});

describe("cspi-finalize golden cases", () => {
  for (const c of goldenCases("cspi-finalize")) {
    it(`${c.name}: ${c.description}`, () => {
      expectGolden(
        c,
        "response.yaml",
        handleCspiFinalize(c.read("request.yaml"), () => c.now, DEFAULT_HOOK_CONFIG),
      );
    });
  }
});
