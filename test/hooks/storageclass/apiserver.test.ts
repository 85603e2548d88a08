// Every object the StorageClass decorator answers, against a real kube-apiserver (server-side dry run, so the
// cases' shared names never collide): accepted as written, and stored with every field exactly as the hook
// wrote it. A PV or Event the server refused would fail the whole sync of the class, and one it stored
// differently would be updated on every sync by Metacontroller's 3-way merge.
import { expect } from "chai";
import type { KubeObject } from "../../../api/types.js";
import { handleStorageClassSync } from "../../../hooks/storageclass/sync.js";
import { canonicalize } from "../../../lib/canonical.js";
import { hasEveryFieldOf } from "../../../lib/cspi/deployment.js";
import { expectContained } from "../../support/contained.js";
import { goldenCases } from "../../support/golden.js";
import { projectInstalled, type KubeCluster } from "../../../testkit/kube.js";

describe("StorageClass decorator answers on a real kube-apiserver", function () {
  this.timeout(25 * 60_000);
  let kube: KubeCluster;

  before(async () => {
    kube = await projectInstalled();
    await kube.kubectl(["create", "namespace", "shop"], { allowFailure: true });
  });

  for (const c of goldenCases("storageclass-sync")) {
    it(`${c.name}: every attachment accepted and stored as written`, async () => {
      const request = c.read("request.yaml") as { attachments: Record<string, Record<string, KubeObject>> };
      const observed = Object.values(request.attachments).flatMap((objects) => Object.values(objects ?? {}));
      const response = handleStorageClassSync(request, () => c.now);
      for (const attachment of response.attachments) {
        const desired = canonicalize(attachment) as unknown as KubeObject;
        // Held as observed (an object the hooks cannot read): Metacontroller finds nothing to write.
        if (
          observed.some(
            (o) =>
              o.kind === desired.kind &&
              o.metadata.name === desired.metadata.name &&
              hasEveryFieldOf(o, desired),
          )
        )
          continue;
        const result = await kube.kubectl(["create", "--dry-run=server", "-f", "-", "-o", "json"], {
          input: JSON.stringify(desired),
          allowFailure: true,
        });
        expect(result.exitCode, `${desired.kind} ${desired.metadata.name}: ${result.stderr}`).to.equal(0);
        expectContained(desired, JSON.parse(result.stdout));
      }
    });
  }
});
