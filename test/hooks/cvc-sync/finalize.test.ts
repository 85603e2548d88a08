import { expect } from "chai";
import { handleCvcFinalize } from "../../../hooks/finalize/cvc.js";
import { BadRequestError } from "../../../lib/errors.js";
import { goldenCases } from "../../support/golden.js";

describe("cvc-finalize refuses a volume that is not being deleted", () => {
  it("answers 400 naming the sync hook, so a finalize URL given as sync hook never tears a volume down", () => {
    const c = goldenCases("cvc-finalize").find((x) => x.name === "target-first")!;
    const request = c.read("request.yaml") as {
      finalizing: boolean;
      parent: { metadata: { deletionTimestamp?: string } };
    };
    request.finalizing = false;
    delete request.parent.metadata.deletionTimestamp;
    expect(() => handleCvcFinalize(request, () => c.now)).to.throw(
      BadRequestError,
      "point the controller's sync hook at /hooks/cvc-sync",
    );
  });
});
