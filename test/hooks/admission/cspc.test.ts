// The webhook route's edges: what is not an AdmissionReview v1, other HTTP methods, and its configuration.
import { expect } from "chai";
import request from "supertest";
import { defaultAdmissionOptions, LOOKUP_TIMEOUT_ENV } from "../../../hooks/admission/cspc.js";
import { makeApp } from "../../../hooks/http/app.js";
import { hookRoutes } from "../../../hooks/routes.js";
import { createLogger } from "../../../runtime/log.js";
import { FakeClusterLookup } from "./fake-lookup.js";

const app = () =>
  makeApp({
    routes: hookRoutes(undefined, { lookup: () => new FakeClusterLookup() }),
    clock: () => new Date("2026-11-21T12:00:00Z"),
    log: createLogger({ level: "silent" }),
  });

const review = (request: Record<string, unknown>, apiVersion = "admission.k8s.io/v1") => ({
  apiVersion,
  kind: "AdmissionReview",
  request,
});

describe("POST /admission/cspc: requests that are not a v1 AdmissionReview", () => {
  const cases: [string, unknown, RegExp][] = [
    [
      "a v1beta1 review",
      review({ uid: "u" }, "admission.k8s.io/v1beta1"),
      /this webhook serves AdmissionReview admission\.k8s\.io\/v1: set admissionReviewVersions: \["v1"\]/,
    ],
    [
      "a review without request",
      { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" },
      /AdmissionReview has no request/,
    ],
    [
      "a request without uid",
      review({ operation: "CREATE", kind: { kind: "CStorPoolCluster" } }),
      /AdmissionReview request has no uid/,
    ],
    [
      "an unknown operation",
      review({ uid: "u", operation: "PATCH", kind: { kind: "CStorPoolCluster" } }),
      /operation "PATCH" is not one of CREATE, UPDATE, DELETE, CONNECT/,
    ],
    [
      "an object that is not a Kubernetes object",
      review({ uid: "u", operation: "CREATE", kind: { kind: "CStorPoolCluster" }, object: [1] }),
      /request\.object is not a Kubernetes object/,
    ],
  ];
  for (const [name, body, message] of cases) {
    it(`${name}: 400 with what is wrong`, async () => {
      const res = await request(app())
        .post("/admission/cspc")
        .send(body as object)
        .expect(400);
      expect(res.body.error).to.match(message);
    });
  }

  it("answers GET with 405 and Allow: POST", async () => {
    const res = await request(app()).get("/admission/cspc").expect(405);
    expect(res.headers.allow).to.equal("POST");
  });
});

describe("admission configuration", () => {
  it(`takes the lookup deadline from ${LOOKUP_TIMEOUT_ENV}, 2000 ms by default`, () => {
    expect(defaultAdmissionOptions({}).lookupTimeoutMs).to.equal(2000);
    expect(defaultAdmissionOptions({ [LOOKUP_TIMEOUT_ENV]: "750" }).lookupTimeoutMs).to.equal(750);
  });

  it("refuses a deadline that is not a whole number of milliseconds, naming the variable", () => {
    expect(() => defaultAdmissionOptions({ [LOOKUP_TIMEOUT_ENV]: "2s" })).to.throw(
      `${LOOKUP_TIMEOUT_ENV}="2s" is not a whole number of milliseconds: set e.g. ${LOOKUP_TIMEOUT_ENV}=2000`,
    );
  });
});
