// The CRD's OpenAPI + CEL rules, run by a real kube-apiserver on the same cases as the TypeScript rules: every
// spec the TypeScript rules refuse the API server refuses too (except the duplicate-device rules that are too
// costly for CEL), every spec they accept it accepts, and the CEL twins use the TypeScript rules' words.
import { expect } from "chai";
import type { KubeObject } from "../../../api/types.js";
import { checkCspcShape } from "../../../lib/rules/admission-shape.js";
import { checkCspcSpec } from "../../../lib/rules/pool-spec.js";
import { goldenCases } from "../../support/golden.js";
import { projectInstalled, type KubeCluster } from "../../../testkit/kube.js";
import { SPEC_CASES, specCaseObject } from "./spec-cases.js";

const NAMESPACE = "admission-cel";
/** Reasons whose CEL twin carries the TypeScript message word for word (after the field path). */
const CEL_WORDED = new Set([
  "InvalidDeviceCount",
  "MissingRaidType",
  "UnsupportedWriteCacheType",
  "ConflictingGroupRoles",
  "NoDataRaidGroup",
  "MixedRedundancy",
  "BothDevicesAndSets",
  "NoDevices",
  "NodeSelectorWithDeviceSets",
  "MixedDeviceSets",
  "InvalidGroupSize",
  "CountNotWholeGroups",
  "NotBlockMode",
  "ClaimTooSmall",
]);
/** Refused by the webhook and cspc-sync only: a CEL version costs far over the API server's budget. */
const WEBHOOK_ONLY = new Set(["DuplicateBlockDevice"]);

/** "spec.pools[0] (nodeSelector k=v) raidGroups[1]: a mirror raid group needs…" → "a mirror raid group needs…" (deviceSets alike) */
function withoutLocation(message: string): string {
  return message.replace(
    /^spec\.pools\[\d+\](?: \((?:nodeSelector|deviceSets) [^)]*\))?(?: (?:raidGroups|deviceSets)\[\d+\])?(?:: | )/,
    "",
  );
}

function spec_only(object: KubeObject) {
  const shape = checkCspcShape(object);
  return shape.length > 0
    ? shape
    : checkCspcSpec((object as unknown as { spec: Parameters<typeof checkCspcSpec>[0] }).spec);
}

describe("CRD CEL rules in a real kube-apiserver, on the TypeScript rules' cases", function () {
  this.timeout(180_000);
  let cluster: KubeCluster;

  before(async () => {
    cluster = await projectInstalled();
    await cluster.kubectl(["create", "namespace", NAMESPACE], { allowFailure: true });
  });

  /** A server-side dry-run create: every admission and validation step, nothing stored. */
  async function dryRunCreate(object: KubeObject) {
    const path = `/apis/openebs.io/v1alpha1/namespaces/${NAMESPACE}/cstorpoolclusters?dryRun=All&fieldValidation=Strict`;
    return cluster.request(cluster.admin, "POST", path, {
      ...object,
      metadata: { ...object.metadata, namespace: NAMESPACE },
    });
  }

  for (const c of SPEC_CASES) {
    it(`${c.name}: ${c.reasons.length === 0 ? "accepted" : `refused (${c.reasons.join(", ")})`}${c.celToo === false ? " by the webhook only" : ""}`, async () => {
      const object = specCaseObject(c, NAMESPACE);
      const violations = spec_only(object);
      expect([...new Set(violations.map((v) => v.reason))], "TypeScript reasons").to.have.members(c.reasons);
      const res = await dryRunCreate(object);
      if (c.reasons.length === 0 || c.celToo === false) {
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        return;
      }
      expect(res.status, JSON.stringify(res.body)).to.equal(422);
      for (const v of violations.filter((v) => CEL_WORDED.has(v.reason))) {
        expect(res.body.message, `CEL words for ${v.reason}`).to.include(withoutLocation(v.message));
      }
    });
  }

  it("agree with the TypeScript spec rules on every CSPC of the admission golden cases", async () => {
    const objects = goldenCases("admission")
      .map((g) => (g.read("review.yaml") as { request: { object?: KubeObject | null } }).request.object)
      .filter((o): o is KubeObject => o?.kind === "CStorPoolCluster");
    expect(objects.length).to.be.greaterThan(20);
    for (const object of objects) {
      const refusedByRules = spec_only(object).filter((v) => !WEBHOOK_ONLY.has(v.reason));
      const { metadata } = object;
      const clean = {
        ...object,
        metadata: {
          name: metadata.name,
          namespace: NAMESPACE,
          ...(metadata.labels ? { labels: metadata.labels } : {}),
        },
      };
      const res = await dryRunCreate(clean);
      // Strict field validation refuses unknown fields with 400 before any rule runs; rules refuse with 422.
      const refused = res.status === 400 || res.status === 422;
      expect(res.status === 201 || refused, JSON.stringify(res.body)).to.equal(true);
      expect(refused, `${JSON.stringify(object.spec)} → ${JSON.stringify(res.body)}`).to.equal(
        refusedByRules.length > 0,
      );
    }
  });
});
