import { DEFAULT_HOOK_CONFIG } from "../../../lib/hook-config.js";
import { finalizeCspc } from "../../../hooks/finalize/cspc.js";
import { finalizeCspi } from "../../../hooks/finalize/cspi.js";
import { expectGolden, goldenCases } from "../../support/golden.js";

describe("cspc-finalize golden cases", () => {
  for (const c of goldenCases("cspc-finalize")) {
    it(`${c.name}: ${c.description}`, () => {
      expectGolden(
        c,
        "response.yaml",
        finalizeCspc(c.read("request.yaml"), () => c.now, DEFAULT_HOOK_CONFIG),
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
        finalizeCspi(c.read("request.yaml"), () => c.now, DEFAULT_HOOK_CONFIG),
      );
    });
  }
});
