import { expect } from "chai";
import request from "supertest";
import { LIMITS } from "../../../api/constants.js";
import { BlockDeviceRefSchema } from "../../../api/schema.js";
import { DEFAULT_BODY_LIMIT, DEFAULT_MEMORY_LIMIT, makeApp, parseByteSize } from "../../../hooks/http/app.js";
import { parseCost } from "../../../hooks/http/body-cost.js";
import { hookRoutes } from "../../../hooks/routes.js";
import { createLogger } from "../../../runtime/log.js";
import { fleetRequest } from "../../../testkit/fleet.js";
import { EventRecorder, type CoreEvent, type EventSubject } from "../../../lib/events/recorder.js";
import { FakeKube } from "../../../testkit/fake-kube.js";
import { goldenCases } from "../../support/golden.js";

const clock = () => new Date("2026-11-21T10:00:00Z");

function app(options: { bodyLimit?: string; memoryLimit?: string; isReady?: () => boolean } = {}) {
  return makeApp({ routes: hookRoutes(), clock, log: createLogger({ level: "silent" }), ...options });
}

describe("hook server HTTP layer", () => {
  it("answers /healthz and /readyz, and /readyz turns 503 while draining", async () => {
    await request(app()).get("/healthz").expect(200, { status: "ok" });
    await request(app()).get("/readyz").expect(200);
    await request(app({ isReady: () => false }))
      .get("/readyz")
      .expect(503, { status: "draining" });
  });

  it("serves Prometheus metrics including hook latency", async () => {
    const server = app();
    await request(server)
      .post("/hooks/cspc-sync")
      .send(fleetRequest({ pools: 1 }))
      .expect(200);
    const res = await request(server).get("/metrics").expect(200);
    expect(res.text).to.match(/cstor_hook_duration_seconds_count\{hook="cspc-sync",code="200"\} 1/);
  });

  it("rejects malformed JSON with 400 and a message, not a stack trace", async () => {
    const res = await request(app())
      .post("/hooks/cspc-sync")
      .set("Content-Type", "application/json")
      .send('{"parent": ')
      .expect(400);
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
    for (const [parent, what] of [
      [[{ kind: "CStorPoolCluster" }], "a list"],
      ["pools", "a string"],
      [7, "a number"],
    ] as const) {
      const res = await request(app()).post("/hooks/cspc-sync").send({ parent }).expect(400);
      expect(res.body.error).to.equal(
        `request parent is ${what}; it must be an object (the CStorPoolCluster)`,
      );
    }
  });

  it("reads a JSON null or a bare value as the valid JSON it is, and says what is wrong with it", async () => {
    for (const [body, what] of [
      ["null", "null"],
      ["42", "a number"],
      ['"x"', "a string"],
      ["[]", "a list"],
    ] as const) {
      const hook = await request(app())
        .post("/hooks/cspc-sync")
        .set("Content-Type", "application/json")
        .send(body)
        .expect(400);
      expect(hook.body.error).to.equal(
        `request body is ${what}; it must be a JSON object (a Metacontroller hook request)`,
      );
      const review = await request(app())
        .post("/admission/cspc")
        .set("Content-Type", "application/json")
        .send(body)
        .expect(400);
      expect(review.body.error).to.equal(
        `request body is ${what}; it must be a JSON object (an AdmissionReview)`,
      );
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
    await request(server)
      .post("/hooks/cspc-sync")
      .send(fleetRequest({ pools: 2 }))
      .expect(413);
    await request(server)
      .post("/hooks/cspc-sync")
      .set("Content-Type", "application/json")
      .set("Content-Encoding", "br2")
      .send("{}")
      .expect(415);
    await request(server)
      .post("/hooks/cspi-sync")
      .set("Content-Type", "application/json")
      .send("{")
      .expect(400);
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
    const res = await request(app({ bodyLimit: "1kb" }))
      .post("/hooks/cspc-sync")
      .send(fleetRequest({ pools: 2 }))
      .expect(413);
    expect(res.body.error).to.match(/larger than the 1kb limit; raise BODY_LIMIT/);
  });

  it("estimates a body's parsed size before parsing it: Kubernetes objects a few times their bytes, ten thousand {} thirty times and more", () => {
    const objects = Buffer.from(JSON.stringify(fleetRequest({ pools: 50, withCspis: true })));
    expect(parseCost(objects) / objects.length).to.be.within(3, 10);
    const empties = Buffer.from(`[${"{},".repeat(10_000)}{}]`);
    expect(parseCost(empties) / empties.length).to.be.above(30);
    expect(
      parseCost(Buffer.from('["a\\"],{[", 1, -2.5e3, true, null]')),
      "brackets inside strings are not values",
    ).to.equal(3 * 34 + 128 + 5 * 40);
  });

  it("refuses with 413 a body whose parsed size alone is over the memory limit, naming it", async () => {
    const res = await request(app({ memoryLimit: "1mb" }))
      .post("/hooks/cspc-sync")
      .set("Content-Type", "application/json")
      .send(`[${"{},".repeat(20_000)}{}]`)
      .expect(413);
    expect(res.body.error).to.match(
      /^request body of 60004 bytes would take about 3 MiB once parsed, far more than Kubernetes objects of its size, and more than the 1mb the hook server gives the requests in flight \(MEMORY_LIMIT\)$/,
    );
  });

  it("turns a request away with 503 and Retry-After while others hold the memory, and serves it once they are done", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const slow = makeApp({
      routes: [{ path: "/hooks/slow", name: "slow", handle: async () => (entered(), await held, {}) }],
      clock,
      log: createLogger({ level: "silent" }),
      memoryLimit: "400kb",
    });
    const body = JSON.stringify({ items: Array.from({ length: 1000 }, (_, i) => ({ name: `object-${i}` })) });
    const first = request(slow)
      .post("/hooks/slow")
      .set("Content-Type", "application/json")
      .send(body)
      .then((r) => r);
    await inside;
    const turned = await request(slow)
      .post("/hooks/slow")
      .set("Content-Type", "application/json")
      .send(body)
      .expect(503);
    expect(turned.headers["retry-after"]).to.equal("1");
    expect(turned.body.error).to.match(
      /busy with other large requests \(400kb of estimated memory in flight, MEMORY_LIMIT\): retry in 1 s/,
    );
    release();
    expect((await first).status).to.equal(200);
    await request(slow).post("/hooks/slow").set("Content-Type", "application/json").send(body).expect(200);
  });

  it("accepts a multi-megabyte request: a 1,000-pool CSPC with its claims and CSPIs", async () => {
    const body = fleetRequest({ pools: 1000, withCspis: true });
    expect(JSON.stringify(body).length).to.be.greaterThan(4_000_000);
    const res = await request(app()).post("/hooks/cspc-sync").send(body).expect(200);
    expect(res.body.children.filter((c: { kind: string }) => c.kind === "CStorPoolInstance")).to.have.length(
      1000,
    );
    expect(res.body.children.filter((c: { kind: string }) => c.kind === "BlockDeviceClaim")).to.have.length(
      4000,
    );
    expect(res.body.status.healthyInstances).to.equal(1000);
  });

  it("takes the cspc-sync request of the largest CSPC the CRD admits, within the body and memory limits (docs/reliability.md)", async function () {
    this.timeout(60_000);
    // 1,000 pools (the CRD's maxItems) of 4 devices whose names have the CRD's maxLength: 4,000 of the 4,096
    // devices a CSPC may list, as Metacontroller sends them (claims as children and related, BlockDevices, CSPIs).
    const nameLength = BlockDeviceRefSchema.properties.blockDeviceName.maxLength!;
    const fleet = fleetRequest({ pools: LIMITS.pools, withCspis: true });
    const text = JSON.stringify(fleet).replace(/blockdevice-(\d{4})-(\d)/g, (_m, pool: string, d: string) =>
      `blockdevice-${pool}-${d}-`.padEnd(nameLength, "x"),
    );
    const devices = LIMITS.pools * 4;
    // What the API server adds to every object it returns (uid, resourceVersion, timestamps, managedFields): 1 kB
    // for each claim (sent twice), BlockDevice and CSPI, more than the objects of this project's tests carry.
    const largest =
      (text.length / devices) * LIMITS.blockDevicesPerCspc +
      1024 * (3 * LIMITS.blockDevicesPerCspc + LIMITS.pools);
    expect(largest, `the largest request, ${(largest / 1e6).toFixed(1)} MB`).to.be.below(
      parseByteSize(DEFAULT_BODY_LIMIT),
    );
    expect(
      parseCost(Buffer.from(text)) * (LIMITS.blockDevicesPerCspc / devices),
      "its estimated parsed size",
    ).to.be.below(parseByteSize(DEFAULT_MEMORY_LIMIT));
    const res = await request(app())
      .post("/hooks/cspc-sync")
      .set("Content-Type", "application/json")
      .send(text)
      .expect(200);
    expect(res.body.children.filter((c: { kind: string }) => c.kind === "BlockDeviceClaim")).to.have.length(
      devices,
    );
  });

  it("answers the customize hook with the BlockDevices, claims, Nodes, PersistentVolumes, the Namespace and the CSPC's volume replicas and volumes the sync needs", async () => {
    const res = await request(app())
      .post("/hooks/cspc-customize")
      .send({ parent: { kind: "CStorPoolCluster", metadata: { name: "c", namespace: "storage" } } })
      .expect(200);
    expect(res.body.relatedResources).to.deep.equal([
      {
        apiVersion: "openebs.io/v1alpha1",
        labelSelector: {},
        namespace: "storage",
        resource: "blockdevices",
      },
      {
        apiVersion: "openebs.io/v1alpha1",
        labelSelector: {},
        namespace: "storage",
        resource: "blockdeviceclaims",
      },
      { apiVersion: "v1", labelSelector: {}, resource: "nodes" },
      { apiVersion: "v1", labelSelector: {}, resource: "persistentvolumes" },
      { apiVersion: "v1", names: ["storage"], resource: "namespaces" },
      {
        apiVersion: "openebs.io/v1alpha1",
        labelSelector: { matchLabels: { "openebs.io/cstor-pool-cluster": "c" } },
        namespace: "storage",
        resource: "cstorvolumereplicas",
      },
      {
        apiVersion: "openebs.io/v1alpha1",
        labelSelector: { matchLabels: { "openebs.io/cstor-pool-cluster": "c" } },
        namespace: "storage",
        resource: "cstorvolumes",
      },
    ]);
  });

  describe("Events a hook emits", () => {
    const refusedEdit = () =>
      goldenCases("cspc-sync")
        .find((c) => c.name === "day2-rejected-device-removed")!
        .read("request.yaml") as object;
    /** A recorder on an in-memory apiserver, and a promise of its first batch: written after the answer. */
    const recording = (kube: FakeKube) => {
      const recorder = new EventRecorder({
        writer: kube,
        component: "cstor-pool-hooks",
        host: "hooks-0",
        clock,
        logger: createLogger({ level: "silent" }),
        repeatAfterMs: 0,
      });
      let done!: (batch: { subject: EventSubject; events: readonly CoreEvent[] }) => void;
      const first = new Promise<{ subject: EventSubject; events: readonly CoreEvent[] }>(
        (resolve) => (done = resolve),
      );
      const events = {
        async record(subject: EventSubject, events: readonly CoreEvent[]) {
          const outcomes = await recorder.record(subject, events);
          done({ subject, events });
          return outcomes;
        },
      };
      return { events, first };
    };

    it("writes the cspc-sync Warning on the CSPC after the answer, which is the same as without Events", async () => {
      const kube = new FakeKube();
      const { events, first } = recording(kube);
      const server = makeApp({ routes: hookRoutes(), clock, log: createLogger({ level: "silent" }), events });
      const answer = await request(server).post("/hooks/cspc-sync").send(refusedEdit()).expect(200);
      const plain = await request(app()).post("/hooks/cspc-sync").send(refusedEdit()).expect(200);
      expect(answer.text).to.equal(plain.text);
      const { subject } = await first;
      expect(subject).to.deep.include({ kind: "CStorPoolCluster" });
      expect(kube.events.map((e) => `${e.cspi} ${e.type} ${e.reason}`)).to.deep.equal([
        "pools Warning ChangesRejected",
      ]);
      expect(kube.events[0].message).to.match(
        /block device c2 was removed; data on it would be lost: put it back$/,
      );
      expect((await request(server).get("/metrics")).text).to.match(
        /cstor_hook_events_total\{hook="cspc-sync",outcome="created"\} 1/,
      );
    });

    it("an Event the apiserver refuses does not change the answer; it is counted as failed", async () => {
      const kube = new FakeKube();
      kube.createEvent = () => Promise.reject(Object.assign(new Error("events is forbidden"), { code: 403 }));
      const { events, first } = recording(kube);
      const server = makeApp({ routes: hookRoutes(), clock, log: createLogger({ level: "silent" }), events });
      await request(server).post("/hooks/cspc-sync").send(refusedEdit()).expect(200);
      await first;
      expect((await request(server).get("/metrics")).text).to.match(
        /cstor_hook_events_total\{hook="cspc-sync",outcome="failed"\} 1/,
      );
    });
  });
});
