// The target Deployment and the CHAP Secret cvc-sync answers, against a real kube-apiserver (server-side dry
// run, so the cases' shared names never collide): accepted as written, and stored with every field exactly as
// the hook wrote it. One the server stored differently (a default it fills in, data it re-encodes) would be
// updated by Metacontroller's 3-way merge on every sync of the volume.
import { expect } from "chai";
import type { KubeObject } from "../../../api/types.js";
import { handleCvcSync } from "../../../hooks/cvc-sync/sync.js";
import { canonicalize } from "../../../lib/canonical.js";
import { expectContained } from "../../support/contained.js";
import { caseHookConfig, goldenCases } from "../../support/golden.js";
import { projectInstalled, type KubeCluster } from "../../../testkit/kube.js";

const CHECKED = new Set(["Deployment", "Secret"]);

describe("cvc-sync's target Deployment and CHAP Secret on a real kube-apiserver", function () {
  this.timeout(25 * 60_000);
  let kube: KubeCluster;

  before(async () => {
    kube = await projectInstalled();
  });

  /** Each distinct Deployment and Secret of every case, with the first case that answers it. */
  const answered = new Map<string, { caseName: string; object: KubeObject }>();
  /** Where an answer holds both: the Deployment's secretKeyRefs against the Secret's data keys. */
  const references: { caseName: string; refs: { name: string; key: string }[]; secret: KubeObject }[] = [];
  for (const c of goldenCases("cvc-sync")) {
    const response = handleCvcSync(c.read("request.yaml"), () => c.now, caseHookConfig(c));
    for (const child of response.children.filter((o) => CHECKED.has(o.kind))) {
      const object = canonicalize(child) as unknown as KubeObject;
      const key = JSON.stringify(object);
      if (!answered.has(key)) answered.set(key, { caseName: c.name, object });
    }
    const deployment = response.children.find((o) => o.kind === "Deployment") as any;
    const secret = response.children.find((o) => o.kind === "Secret");
    if (deployment && secret) {
      const env = deployment.spec.template.spec.containers[0].env as {
        valueFrom?: { secretKeyRef?: { name: string; key: string } };
      }[];
      const refs = env.flatMap((e) => (e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : []));
      references.push({ caseName: c.name, refs, secret });
    }
  }

  it("the golden cases answer both kinds; the target's credentials are keys of the Secret beside it", () => {
    const kinds = [...answered.values()].map(({ object }) => object.kind);
    expect(kinds).to.include.members(["Deployment", "Secret"]);
    expect(references).to.have.length.greaterThan(0);
    for (const { caseName, refs, secret } of references) {
      expect(refs, caseName).to.have.length(2);
      const data = (secret as { data?: Record<string, string> }).data ?? {};
      for (const ref of refs) {
        expect(ref.name, caseName).to.equal(secret.metadata.name);
        expect(Object.keys(data), caseName).to.include(ref.key);
      }
    }
  });

  for (const { caseName, object } of answered.values()) {
    it(`${caseName}: ${object.kind} ${object.metadata.name} accepted and stored as written`, async () => {
      const result = await kube.kubectl(["create", "--dry-run=server", "-f", "-", "-o", "json"], {
        input: JSON.stringify(object),
        allowFailure: true,
      });
      expect(result.exitCode, `${object.kind} ${object.metadata.name}: ${result.stderr}`).to.equal(0);
      expectContained(object, JSON.parse(result.stdout));
    });
  }
});
