// cspi-sync and cv-status ask for a 5 s resync until they observe the status they answered
// (docs/adr/0042-a-decorator-asks-for-a-short-resync-until-its-status.md). An answer the apiserver stores
// differently (a value normalised, a field pruned) would keep that resync going for ever: every golden
// answer, written through the status subresource, must come back as answered.
import { expect } from "chai";
import { API_VERSION } from "../../api/constants.js";
import type { Clock, DecoratorSyncResponse, KubeObject } from "../../api/types.js";
import { handleCspiSync } from "../../hooks/cspi-sync/sync.js";
import { handleCvStatus } from "../../hooks/cv-status/sync.js";
import { DEFAULT_HOOK_CONFIG } from "../../lib/hook-config.js";
import { projectInstalled, type KubeCluster } from "../../testkit/kube.js";
import { goldenCases } from "../support/golden.js";

const NS = "status-round-trip";
/** Golden cases whose observed status breaks today's CRD (read tolerantly: it was written under an older one). */
const STORED_BY_AN_OLDER_CRD = new Set(["cspi-sync/read-tolerantly-older-status"]);

const AREAS: [string, string, (request: any, clock: Clock) => DecoratorSyncResponse][] = [
  [
    "cspi-sync",
    "cstorpoolinstances",
    (request, clock) => handleCspiSync(request, clock, DEFAULT_HOOK_CONFIG),
  ],
  ["cv-status", "cstorvolumes", (request, clock) => handleCvStatus(request, clock)],
];

describe("integration: a decorator's status answer reads back from the apiserver as answered", function () {
  this.timeout(25 * 60_000);
  let cluster: KubeCluster;

  before(async () => {
    cluster = await projectInstalled();
    await cluster.kubectl(["create", "namespace", NS]);
  });

  for (const [area, resource, answer] of AREAS) {
    for (const c of goldenCases(area)) {
      const olderCrd = STORED_BY_AN_OLDER_CRD.has(`${area}/${c.name}`);
      const title = olderCrd
        ? "a status only an older CRD could have stored: refused here, as its own write would be"
        : "stored as answered, and answered the same again";
      it(`${area}/${c.name}: ${title}`, async () => {
        const request = structuredClone(c.read("request.yaml")) as {
          object: KubeObject & { status?: unknown };
        };
        const { status: observed, ...withoutStatus } = request.object;
        const path = `/apis/${API_VERSION}/namespaces/${NS}/${resource}`;
        const metadata = { name: c.name, namespace: NS, labels: request.object.metadata.labels ?? {} };
        const created = await cluster.request(cluster.admin, "POST", path, { ...withoutStatus, metadata });
        expect(created.status, JSON.stringify(created.body)).to.equal(201);
        const putStatus = (status: unknown) =>
          cluster.request(cluster.admin, "PUT", `${path}/${c.name}/status`, { ...created.body, status });
        const first = answer(request, () => c.now);
        const written = await putStatus(first.status);
        if (olderCrd) {
          expect((await putStatus(observed)).status, "the observed status").to.equal(422);
          expect(written.status, "the answer, carrying it").to.equal(422);
          return;
        }
        expect(written.status, JSON.stringify(written.body)).to.equal(200);
        expect(written.body.status, "stored as answered").to.deep.equal(first.status);
        request.object = { ...request.object, status: written.body.status };
        expect(answer(request, () => c.now).status, "the same answer on what was stored").to.deep.equal(
          first.status,
        );
      });
    }
  }
});
