import { expect } from "chai";
import type { CompositeSyncResponse, CSPC, CSPI, KubeObject } from "../../../api/types.js";
import { DEFAULT_HOOK_CONFIG } from "../../../lib/hook-config.js";
import { ownedView } from "../../../lib/cspc/build.js";
import { handleCspcFinalize } from "../../../hooks/finalize/cspc.js";
import { canonicalize } from "../../../lib/canonical.js";
import { BadRequestError } from "../../../lib/errors.js";
import { goldenCases } from "../../support/golden.js";

const CSPI_KEY = "CStorPoolInstance.openebs.io/v1alpha1";
const CLAIM_KEY = "BlockDeviceClaim.openebs.io/v1alpha1";
const NOW = new Date("2026-11-21T10:00:00Z");

interface Request {
  parent: CSPC & KubeObject;
  children: Record<string, Record<string, KubeObject>>;
  finalizing: boolean;
}

const requestOf = (name: string): Request =>
  structuredClone(
    goldenCases("cspc-finalize")
      .find((c) => c.name === name)!
      .read("request.yaml"),
  ) as Request;
const finalize = (request: Request): CompositeSyncResponse =>
  handleCspcFinalize(request, () => NOW, DEFAULT_HOOK_CONFIG);
const namesOf = (objects: readonly KubeObject[], kind: string) =>
  objects.filter((o) => o.kind === kind).map((o) => o.metadata.name!);
const condition = (response: CompositeSyncResponse, type: string) =>
  (response.status.conditions as { type: string; status: string; reason: string; message: string }[]).find(
    (c) => c.type === type,
  )!;

/**
 * Metacontroller and the node daemon between two finalize calls: returned children are applied, omitted ones
 * deleted. A deleted CSPI first waits on the node daemon's pool-protection finalizer (one round), claims go at once.
 */
function applyAnswer(request: Request, response: CompositeSyncResponse): void {
  const returned = new Map(response.children.map((c) => [c.metadata.name!, c]));
  for (const [key, cspi] of Object.entries(request.children[CSPI_KEY])) {
    const desired = returned.get(cspi.metadata.name!);
    if (cspi.metadata.deletionTimestamp) delete request.children[CSPI_KEY][key];
    else if (!desired) {
      cspi.metadata.deletionTimestamp = NOW.toISOString();
      cspi.metadata.finalizers = ["openebs.io/pool-protection"];
    } else cspi.metadata.annotations = { ...desired.metadata.annotations };
  }
  for (const [key, claim] of Object.entries(request.children[CLAIM_KEY])) {
    if (!returned.has(claim.metadata.name!)) delete request.children[CLAIM_KEY][key];
  }
  request.parent.status = response.status;
}

describe("cspc-finalize", () => {
  it("tears a CSPC down in order: mark every pool, then delete pools, then release claims, then finalize", () => {
    const request = requestOf("step-1-mark-pools");
    const claims = Object.values(request.children[CLAIM_KEY]).map((c) => c.metadata.name!);
    const steps: string[] = [];
    for (let round = 0; round < 10; round++) {
      const observedPools = Object.values(request.children[CSPI_KEY]) as unknown as CSPI[];
      const response = finalize(request);
      steps.push(condition(response, "Deleting").reason);
      if (response.finalized) break;

      const returned = new Set(response.children.map((c) => c.metadata.name));
      for (const pool of observedPools.filter(
        (p) => !p.metadata.deletionTimestamp && !returned.has(p.metadata.name),
      )) {
        expect(
          pool.metadata.annotations?.["openebs.io/pool-removal"],
          `${pool.metadata.name} deleted before it was marked`,
        ).to.equal("requested");
      }
      if (observedPools.length > 0)
        expect(
          namesOf(response.children, "BlockDeviceClaim"),
          "claims kept while a pool exists",
        ).to.have.members(claims);
      applyAnswer(request, response);
    }
    expect(steps).to.deep.equal([
      "RemovingPools",
      "RemovingPools",
      "RemovingPools",
      "ReleasingClaims",
      "Finalized",
    ]);
    expect(request.children[CSPI_KEY]).to.deep.equal({});
    expect(request.children[CLAIM_KEY]).to.deep.equal({});
  });

  it("is idempotent: called again after finalizing, it answers the same", () => {
    const request = requestOf("step-5-finalized");
    const first = finalize(request);
    expect(first.finalized).to.equal(true);
    request.parent.status = first.status;
    expect(canonicalize(finalize(request))).to.deep.equal(canonicalize(first));
  });

  it("gives the same answer for the same observation at every step (no status write loop)", () => {
    for (const c of goldenCases("cspc-finalize")) {
      const request = structuredClone(c.read("request.yaml")) as Request;
      const first = handleCspcFinalize(request, () => c.now, DEFAULT_HOOK_CONFIG);
      request.parent.status = first.status;
      const later = handleCspcFinalize(
        request,
        () => new Date(c.now.getTime() + 3_600_000),
        DEFAULT_HOOK_CONFIG,
      );
      expect(canonicalize(later), c.name).to.deep.equal(canonicalize(first));
    }
  });

  it("removes nothing while a pool holds volumes, says which pool and why, and continues once it is empty", () => {
    const request = requestOf("blocked-by-volumes");
    const blocked = finalize(request);
    const observed = Object.values(request.children)
      .flatMap((m) => Object.values(m))
      .map(ownedView);
    expect(canonicalize(blocked.children)).to.have.deep.members(canonicalize(observed) as object[]);
    expect(blocked.finalized).to.equal(false);
    const removal = condition(blocked, "PoolRemovalBlocked");
    expect(removal).to.include({ status: "True", reason: "PoolHoldsVolumes" });
    expect(removal.message).to.contain(
      "pool cstor-pool-mirror-8f19f5 on node gke-cstor-it-default-pool-2 holds 3 volume replicas (as its node daemon reports)",
    );
    expect(condition(blocked, "Ready")).to.include({ status: "False", reason: "PoolHoldsVolumes" });

    (
      request.children[CSPI_KEY]["openebs/cstor-pool-mirror-8f19f5"].status as Record<string, unknown>
    ).provisionedReplicas = 0;
    const unblocked = finalize(request);
    expect(namesOf(unblocked.children, "CStorPoolInstance")).to.deep.equal(["cstor-pool-mirror-8f19f5"]);
    expect(unblocked.children[0].metadata.annotations).to.deep.equal({
      "openebs.io/pool-removal": "requested",
    });
    expect(condition(unblocked, "PoolRemovalBlocked")).to.include({ status: "False" });
  });

  it("still finalizes a CSPC whose pool specs could never be provisioned", () => {
    const request = requestOf("step-4-release-claims");
    request.parent.spec.pools = [
      {
        nodeSelector: { "kubernetes.io/hostname": "no-such-node" },
        raidGroups: [{ type: "mirror", blockDevices: [{ blockDeviceName: "x" }, { blockDeviceName: "x" }] }],
      },
    ];
    const response = finalize(request);
    expect(response.children).to.deep.equal([]);
    expect(response.status).to.include({ desiredInstances: 1, provisionedInstances: 0 });
  });

  it("keeps condition messages short for a CSPC of many pools", () => {
    const request = requestOf("step-1-mark-pools");
    const template = Object.values(request.children[CSPI_KEY])[0];
    request.children[CSPI_KEY] = {};
    for (let i = 0; i < 1000; i++) {
      const cspi = structuredClone(template);
      cspi.metadata.name = `cstor-pool-mirror-${String(i).padStart(6, "0")}`;
      request.children[CSPI_KEY][`openebs/${cspi.metadata.name}`] = cspi;
    }
    const message = condition(finalize(request), "Deleting").message;
    expect(message).to.contain("and 980 more");
    expect(message.length).to.be.below(2000);
  });

  it("runs when the CSPC no longer matches the controller (finalizing without deletionTimestamp)", () => {
    const request = requestOf("step-5-finalized");
    delete request.parent.metadata.deletionTimestamp;
    expect(finalize(request).finalized).to.equal(true);
  });

  it("refuses a CSPC that is not being deleted, so a misconfigured controller cannot tear pools down", () => {
    const request = requestOf("step-1-mark-pools");
    delete request.parent.metadata.deletionTimestamp;
    request.finalizing = false;
    expect(() => finalize(request)).to.throw(
      BadRequestError,
      "CStorPoolCluster openebs/cstor-pool-mirror is not being deleted (finalizing is false and it has no deletionTimestamp): this is a finalize hook; point the controller's sync hook at /hooks/cspc-sync",
    );
  });
});
