import { expect } from "chai";
import { DEFAULTS } from "../../../api/constants.js";
import type { CSPI, DecoratorSyncResponse, KubeObject } from "../../../api/types.js";
import { DEFAULT_HOOK_CONFIG } from "../../../lib/hook-config.js";
import { handleCspiFinalize } from "../../../hooks/finalize/cspi.js";
import { canonicalize } from "../../../lib/canonical.js";
import { BadRequestError } from "../../../lib/errors.js";
import { goldenCases } from "../../support/golden.js";

interface Request {
  object: CSPI & KubeObject;
  attachments: Record<string, Record<string, KubeObject>>;
  finalizing: boolean;
}

const NOW = new Date("2026-11-21T10:00:00Z");
const requestOf = (name: string): Request =>
  structuredClone(
    goldenCases("cspi-finalize")
      .find((c) => c.name === name)!
      .read("request.yaml"),
  ) as Request;
const finalize = (request: Request): DecoratorSyncResponse =>
  handleCspiFinalize(request, () => NOW, DEFAULT_HOOK_CONFIG);

describe("cspi-finalize", () => {
  it("asks for no attachment and finalizes only once none is observed", () => {
    const present = finalize(requestOf("deployment-present"));
    expect(present.attachments).to.deep.equal([]);
    expect(present.finalized).to.equal(false);
    expect(finalize(requestOf("deployment-terminating")).finalized).to.equal(false);
    expect(finalize(requestOf("deployment-gone")).finalized).to.equal(true);
  });

  it("waits for any attachment, not only the Deployment it expects by name", () => {
    const request = requestOf("deployment-present");
    const deployments = request.attachments["Deployment.apps/v1"];
    const [key, deployment] = Object.entries(deployments)[0];
    delete deployments[key];
    deployment.metadata.name = "renamed-by-hand";
    deployments[`openebs/renamed-by-hand`] = deployment;
    expect(finalize(request).finalized).to.equal(false);
  });

  it("is idempotent: called again with its own status after finalizing, it answers the same, with no short resync once its status is seen", () => {
    const request = requestOf("deployment-gone");
    const first = finalize(request);
    expect(first.resyncAfterSeconds, "its status not seen yet").to.equal(DEFAULTS.confirmResyncSeconds);
    request.object.status = first.status as CSPI["status"];
    request.object.metadata.finalizers = ["openebs.io/pool-protection"];
    const second = finalize(request);
    expect(canonicalize({ ...second, resyncAfterSeconds: 0 })).to.deep.equal(
      canonicalize({ ...first, resyncAfterSeconds: 0 }),
    );
    expect(second.resyncAfterSeconds).to.equal(DEFAULT_HOOK_CONFIG.resyncSeconds);
  });

  it("reports the removed pool Deployment in PodAvailable while the CSPI waits for the node daemon", () => {
    const conditions = (finalize(requestOf("deployment-gone")).status as CSPI["status"])!.conditions!;
    expect(conditions.find((c) => c.type === "PodAvailable")).to.include({
      status: "False",
      reason: "MissingPoolDeployment",
      message:
        "pool Deployment openebs/cstor-pool-mirror-1a264d is removed because the CStorPoolInstance is being deleted",
    });
  });

  it("refuses a CSPI that is not being deleted", () => {
    const request = requestOf("deployment-present");
    delete request.object.metadata.deletionTimestamp;
    request.finalizing = false;
    expect(() => finalize(request)).to.throw(
      BadRequestError,
      /is not being deleted .*point the controller's sync hook at \/hooks\/cspi-sync/,
    );
  });
});
