// The fuzz checks themselves must be able to fail: each is shown a good answer (a golden response) and the
// same answer broken the way a data-losing hook would break it.
import { expect } from "chai";
import { ANNOTATION, POOL_REMOVAL_REQUESTED } from "../../api/constants.js";
import { goldenCases } from "../support/golden.js";
import { handleCspiSync } from "../../hooks/cspi-sync/sync.js";
import { DEFAULT_HOOK_CONFIG } from "../../lib/hook-config.js";
import {
  compositeChildrenProblems,
  cspiFinalizeProblems,
  cspiSyncProblems,
  finalizeCspcProblems,
  nullsIn,
} from "./support/invariants.js";

type Doc = Record<string, any>;
const fixedPoint = goldenCases("cspc-sync").find((c) => c.name === "fixed-point")!;
const request = () => JSON.parse(JSON.stringify(fixedPoint.read("request.yaml"))) as Doc;
const response = () => JSON.parse(JSON.stringify(fixedPoint.read("response.yaml"))) as Doc;
const cspi = (r: Doc, name: string) => r.children.find((c: Doc) => c.metadata.name === name);
const claimIndex = (r: Doc, device: string) =>
  r.children.findIndex((c: Doc) => c.kind === "BlockDeviceClaim" && c.spec.blockDeviceName === device);

describe("reliability checks catch a data-losing answer", () => {
  it("accept the golden fixed-point answer", () => {
    expect(compositeChildrenProblems(request(), response())).to.deep.equal([]);
    expect(nullsIn(response())).to.deep.equal([]);
  });

  it("catch a CSPI dropped without the removal mark, and accept one dropped after it", () => {
    const broken = response();
    broken.children = broken.children.filter((c: Doc) => c.metadata.name !== "cstor-pool-mirror-1a264d");
    expect(compositeChildrenProblems(request(), broken)).to.include(
      "observed CSPI cstor-pool-mirror-1a264d was dropped without being marked for removal",
    );
    const marked = request();
    const observed = Object.values(marked.children["CStorPoolInstance.openebs.io/v1alpha1"] as Doc).find(
      (c: Doc) => c.metadata.name === "cstor-pool-mirror-1a264d",
    );
    observed.metadata.annotations = { [ANNOTATION.poolRemoval]: POOL_REMOVAL_REQUESTED };
    expect(compositeChildrenProblems(marked, broken)).to.deep.equal([]);
  });

  it("catch a device dropped from a group, and accept it replaced by a marked successor in the same group", () => {
    const broken = response();
    cspi(broken, "cstor-pool-mirror-1a264d").spec.raidGroups[1].blockDevices[0] = {
      blockDeviceName: "pool-1-bd-9",
    };
    expect(compositeChildrenProblems(request(), broken)).to.deep.equal([
      "device pool-1-bd-3 left raidGroups[1] of CSPI cstor-pool-mirror-1a264d without a replacement",
    ]);
    const successor = structuredClone(broken.children[claimIndex(broken, "pool-1-bd-3")]);
    successor.metadata.name = "bdc-pool-1-bd-9";
    successor.metadata.annotations = { [ANNOTATION.bdPredecessor]: "pool-1-bd-3" };
    successor.spec.blockDeviceName = "pool-1-bd-9";
    broken.children.push(successor);
    expect(compositeChildrenProblems(request(), broken)).to.deep.equal([]);
    cspi(broken, "cstor-pool-mirror-1a264d").spec.raidGroups[0].blockDevices.push({
      blockDeviceName: "pool-1-bd-9",
    });
    cspi(broken, "cstor-pool-mirror-1a264d").spec.raidGroups[1].blockDevices.shift();
    expect(compositeChildrenProblems(request(), broken)).to.deep.equal([
      "device pool-1-bd-3 of CSPI cstor-pool-mirror-1a264d was replaced by pool-1-bd-9, which is not in its group",
    ]);
  });

  it("catch a claim of a pool's device left out", () => {
    const broken = response();
    broken.children.splice(claimIndex(broken, "pool-2-bd-4"), 1);
    expect(compositeChildrenProblems(request(), broken)).to.deep.equal([
      "claim of device pool-2-bd-4 of observed CSPI cstor-pool-mirror-8f19f5 is missing",
    ]);
  });

  it("catch a null, a finalize that removes a pool holding volumes or finalizes early, and a CSPI answer without its Deployment", () => {
    expect(nullsIn({ status: { conditions: [null] } })).to.deep.equal(["$.status.conditions[0] is null"]);
    const holding = request();
    for (const c of Object.values(holding.children["CStorPoolInstance.openebs.io/v1alpha1"] as Doc))
      c.status.provisionedReplicas = 1;
    const emptied = { ...response(), children: [], finalized: true };
    expect(finalizeCspcProblems(holding, emptied)).to.include.members([
      "CSPI cstor-pool-mirror-1a264d was removed while a pool holds volumes",
      "finalized with 2 CSPI(s) and 8 claim(s) still observed",
    ]);
    expect(cspiSyncProblems({ finalizing: false }, { attachments: [] })).to.deep.equal([
      "answer has 0 pool Deployments, want exactly 1",
    ]);
    expect(
      cspiFinalizeProblems(
        { attachments: { "Deployment.apps/v1": { "openebs/x": {} } } },
        { finalized: true },
      ),
    ).to.deep.equal(["finalized while 1 attachment(s) are observed"]);
  });

  it("catch two rollout permits in one CSPC, a permit for a template no CSPI reports pending, and accept the one permit of a golden answer", () => {
    const oneGoes = goldenCases("cspc-sync").find((c) => c.name === "rollout-two-pools-one-goes")!;
    const permitted = oneGoes.read("request.yaml") as Doc;
    const answer = oneGoes.read("response.yaml") as Doc;
    expect(compositeChildrenProblems(permitted, answer)).to.deep.equal([]);
    const twice = structuredClone(answer);
    cspi(twice, "pools-e5074c").metadata.annotations = { [ANNOTATION.rolloutPermit]: "8e2f4a6c1d" };
    expect(compositeChildrenProblems(permitted, twice)).to.deep.equal([
      "2 CSPIs carry a rollout permit (pools-2e5b28, pools-e5074c), want at most 1",
    ]);
    const unrequested = structuredClone(answer);
    cspi(unrequested, "pools-2e5b28").metadata.annotations[ANNOTATION.rolloutPermit] = "0000000000";
    expect(compositeChildrenProblems(permitted, unrequested)).to.deep.equal([
      'CSPI pools-2e5b28 got rollout permit "0000000000" for a template it does not report pending',
    ]);
  });

  it("catch an available pool pod given a new template without a permit, and accept the waiting answer that keeps it", () => {
    const waits = goldenCases("cspi-sync").find((c) => c.name === "rollout-tolerations-changed-waits")!;
    const waiting = waits.read("request.yaml") as Doc;
    const answer = waits.read("response.yaml") as Doc;
    expect(cspiSyncProblems(waiting, answer)).to.deep.equal([]);
    // What the hook answers once permitted: the wanted template, on the same node.
    const permitted = structuredClone(waiting) as any;
    permitted.object.metadata.annotations = {
      [ANNOTATION.rolloutPermit]: (answer as any).status.pendingRollout,
    };
    const rolled = handleCspiSync(permitted, () => waits.now, DEFAULT_HOOK_CONFIG) as unknown as Doc;
    expect(cspiSyncProblems(waiting, rolled)).to.deep.equal([
      "the available pool pod of cstor-pool-mirror-1a264d got a new template without a rollout permit",
    ]);
  });
});
