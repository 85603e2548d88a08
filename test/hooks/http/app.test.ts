import { expect } from "chai";
import request from "supertest";
import { makeApp } from "../../../hooks/http/app.js";
import { hookRoutes } from "../../../hooks/routes.js";
import { createLogger } from "../../../lib/log.js";
import { fleetRequest } from "../../support/fleet.js";

const clock = () => new Date("2026-11-21T10:00:00Z");

function app(options: { bodyLimit?: string; isReady?: () => boolean } = {}) {
  return makeApp({ routes: hookRoutes(), clock, log: createLogger({ level: "silent" }), ...options });
}

describe("hook server HTTP layer", () => {
  it("answers /healthz and /readyz, and /readyz turns 503 while draining", async () => {
    await request(app()).get("/healthz").expect(200, { status: "ok" });
    await request(app()).get("/readyz").expect(200);
    await request(app({ isReady: () => false })).get("/readyz").expect(503, { status: "draining" });
  });

  it("serves Prometheus metrics including hook latency", async () => {
    const server = app();
    await request(server).post("/hooks/cspc-sync").send(fleetRequest({ pools: 1 })).expect(200);
    const res = await request(server).get("/metrics").expect(200);
    expect(res.text).to.match(/cstor_hook_duration_seconds_count\{hook="cspc-sync",code="200"\} 1/);
  });

  it("rejects malformed JSON with 400 and a message, not a stack trace", async () => {
    const res = await request(app()).post("/hooks/cspc-sync").set("Content-Type", "application/json").send('{"parent": ').expect(400);
    expect(res.body.error).to.match(/not valid JSON/);
    expect(res.text).to.not.match(/at .*\.ts:\d+/);
  });

  it("rejects a request without a parent, or with the wrong kind, with 400 saying what is wrong", async () => {
    const missing = await request(app()).post("/hooks/cspc-sync").send({ children: {} }).expect(400);
    expect(missing.body.error).to.equal("request has no parent: Metacontroller always sends it");
    const wrong = await request(app())
      .post("/hooks/cspc-sync")
      .send({ parent: { kind: "CStorPoolInstance", metadata: { name: "x" } } })
      .expect(400);
    expect(wrong.body.error).to.match(/parent is a "CStorPoolInstance", this hook serves CStorPoolCluster/);
  });

  it("says a parent that is not an object must be one, rather than that there is none", async () => {
    for (const [parent, what] of [[[{ kind: "CStorPoolCluster" }], "a list"], ["pools", "a string"], [7, "a number"]] as const) {
      const res = await request(app()).post("/hooks/cspc-sync").send({ parent }).expect(400);
      expect(res.body.error).to.equal(`request parent is ${what}; it must be an object (the CStorPoolCluster)`);
    }
  });

  it("reads a JSON null or a bare value as the valid JSON it is, and says what is wrong with it", async () => {
    for (const [body, what] of [["null", "null"], ["42", "a number"], ['"x"', "a string"], ["[]", "a list"]] as const) {
      const hook = await request(app()).post("/hooks/cspc-sync").set("Content-Type", "application/json").send(body).expect(400);
      expect(hook.body.error).to.equal(`request body is ${what}; it must be a JSON object (a Metacontroller hook request)`);
      const review = await request(app()).post("/admission/cspc").set("Content-Type", "application/json").send(body).expect(400);
      expect(review.body.error).to.equal(`request body is ${what}; it must be a JSON object (an AdmissionReview)`);
    }
  });

  it("answers 405 with Allow on /healthz, /readyz and /metrics for methods they do not serve", async () => {
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      const res = await request(app()).put(path).expect(405);
      expect(res.headers.allow).to.equal("GET, HEAD");
      expect(res.body.error).to.equal(`PUT is not allowed on ${path}; use GET`);
    }
  });

  it("counts refused bodies (413, 415, 400) in the request metrics of their hook", async () => {
    const server = app({ bodyLimit: "1kb" });
    await request(server).post("/hooks/cspc-sync").send(fleetRequest({ pools: 2 })).expect(413);
    await request(server).post("/hooks/cspc-sync").set("Content-Type", "application/json").set("Content-Encoding", "br2").send("{}").expect(415);
    await request(server).post("/hooks/cspi-sync").set("Content-Type", "application/json").send("{").expect(400);
    const res = await request(server).get("/metrics").expect(200);
    expect(res.text).to.match(/cstor_hook_duration_seconds_count\{hook="cspc-sync",code="413"\} 1/);
    expect(res.text).to.match(/cstor_hook_duration_seconds_count\{hook="cspc-sync",code="415"\} 1/);
    expect(res.text).to.match(/cstor_hook_duration_seconds_count\{hook="cspi-sync",code="400"\} 1/);
  });

  it("answers 405 with Allow: POST for other methods on a hook path, and 404 elsewhere", async () => {
    const res = await request(app()).get("/hooks/cspc-sync").expect(405);
    expect(res.headers.allow).to.equal("POST");
    await request(app()).post("/hooks/nope").send({}).expect(404);
  });

  it("refuses an oversize body with 413 and says which setting raises the limit", async () => {
    const res = await request(app({ bodyLimit: "1kb" })).post("/hooks/cspc-sync").send(fleetRequest({ pools: 2 })).expect(413);
    expect(res.body.error).to.match(/larger than the 1kb limit; raise BODY_LIMIT/);
  });

  it("accepts a multi-megabyte request: a 1,000-pool CSPC with its claims and CSPIs", async () => {
    const body = fleetRequest({ pools: 1000, withCspis: true });
    expect(JSON.stringify(body).length).to.be.greaterThan(4_000_000);
    const res = await request(app()).post("/hooks/cspc-sync").send(body).expect(200);
    expect(res.body.children.filter((c: { kind: string }) => c.kind === "CStorPoolInstance")).to.have.length(1000);
    expect(res.body.children.filter((c: { kind: string }) => c.kind === "BlockDeviceClaim")).to.have.length(4000);
    expect(res.body.status.healthyInstances).to.equal(1000);
  });

  it("answers the customize hook with the BlockDevices, claims and Nodes the sync needs", async () => {
    const res = await request(app())
      .post("/hooks/cspc-customize")
      .send({ parent: { kind: "CStorPoolCluster", metadata: { name: "c", namespace: "storage" } } })
      .expect(200);
    expect(res.body.relatedResources).to.deep.equal([
      { apiVersion: "openebs.io/v1alpha1", labelSelector: {}, namespace: "storage", resource: "blockdevices" },
      { apiVersion: "openebs.io/v1alpha1", labelSelector: {}, namespace: "storage", resource: "blockdeviceclaims" },
      { apiVersion: "v1", labelSelector: {}, resource: "nodes" },
    ]);
  });
});
