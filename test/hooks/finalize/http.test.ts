// The three endpoints of issue 4 behind the real express adapter.
import { expect } from "chai";
import request from "supertest";
import { DEFAULT_HOOK_CONFIG } from "../../../lib/hook-config.js";
import { makeApp } from "../../../hooks/http/app.js";
import { hookRoutes } from "../../../hooks/routes.js";
import { canonicalize } from "../../../lib/canonical.js";
import { createLogger } from "../../../runtime/log.js";
import { goldenCases } from "../../support/golden.js";

const app = () =>
  makeApp({
    routes: hookRoutes(DEFAULT_HOOK_CONFIG),
    clock: () => new Date("2026-11-21T10:00:00Z"),
    log: createLogger({ level: "silent" }),
  });
const golden = (area: string, name: string) => goldenCases(area).find((c) => c.name === name)!;

describe("cspi-sync, cspc-finalize and cspi-finalize over HTTP", () => {
  const endpoints = [
    {
      path: "/hooks/cspi-sync",
      area: "cspi-sync",
      name: "seed-4-mirror-pool-1",
      field: "object",
      kind: "CStorPoolInstance",
    },
    {
      path: "/hooks/cspi-finalize",
      area: "cspi-finalize",
      name: "deployment-gone",
      field: "object",
      kind: "CStorPoolInstance",
    },
    {
      path: "/hooks/cspc-finalize",
      area: "cspc-finalize",
      name: "step-1-mark-pools",
      field: "parent",
      kind: "CStorPoolCluster",
    },
  ];

  for (const e of endpoints) {
    it(`${e.path} answers 200 with the golden response`, async () => {
      const c = golden(e.area, e.name);
      const res = await request(app())
        .post(e.path)
        .send(c.read("request.yaml") as object)
        .expect(200);
      expect(res.body).to.deep.equal(canonicalize(c.read("response.yaml")));
    });

    it(`${e.path} answers 400 naming the kind it serves when sent another kind`, async () => {
      const body = structuredClone(golden(e.area, e.name).read("request.yaml")) as Record<
        string,
        { kind: string }
      >;
      body[e.field].kind = "Deployment";
      const res = await request(app()).post(e.path).send(body).expect(400);
      expect(res.body.error).to.equal(
        `request ${e.field} is a "Deployment", this hook serves ${e.kind}: check the controller's resource`,
      );
    });

    it(`${e.path} answers 405 to GET`, async () => {
      await request(app()).get(e.path).expect(405);
    });
  }

  it("a finalize hook answers 400 for an object that is not being deleted, and changes nothing", async () => {
    const body = structuredClone(golden("cspc-finalize", "step-1-mark-pools").read("request.yaml")) as {
      parent: { metadata: Record<string, unknown> };
      finalizing: boolean;
    };
    delete body.parent.metadata.deletionTimestamp;
    body.finalizing = false;
    const res = await request(app()).post("/hooks/cspc-finalize").send(body).expect(400);
    expect(res.body).to.have.keys(["error"]);
    expect(res.body.error).to.match(/is not being deleted/);
  });

  it("cspi-sync answers 400 with the field and the fix for a resource value the API server would reject", async () => {
    const body = structuredClone(golden("cspi-sync", "seed-1-stripe").read("request.yaml")) as {
      object: { spec: { poolConfig: Record<string, unknown> } };
    };
    body.object.spec.poolConfig.resources = { requests: { cpu: "two" } };
    const res = await request(app()).post("/hooks/cspi-sync").send(body).expect(400);
    expect(res.body.error).to.match(
      /spec\.poolConfig\.resources\.requests\.cpu "two" is not a non-negative Kubernetes quantity/,
    );
  });
});
