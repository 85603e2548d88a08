import { handleStorageClassSync } from "../../../hooks/storageclass/sync.js";
import { expectGolden, goldenCases } from "../../support/golden.js";

describe("storageclass-sync golden cases", () => {
  for (const c of goldenCases("storageclass-sync")) {
    it(`${c.name}: ${c.description}`, () => {
      expectGolden(
        c,
        "response.yaml",
        handleStorageClassSync(c.read("request.yaml"), () => c.now),
      );
    });
  }
});
