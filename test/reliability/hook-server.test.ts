// The hook server as HTTP: timeouts that cut slow clients off and keep idle connections longer than
// Metacontroller's Go client does, a drain on SIGTERM that finishes what is in flight and refuses the rest,
// bodies that cannot be read (bombs, unknown encodings), error answers without stack traces, and one JSON log
// line per request carrying the request id and the object it is about.
import { spawn, type ChildProcess } from "node:child_process";
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { expect } from "chai";
import fc from "fast-check";
import request from "supertest";
import { DEFAULT_BODY_LIMIT, makeApp, parseByteSize, type HookRoute } from "../../hooks/http/app.js";
import { listen, type Listening } from "../../hooks/http/listen.js";
import { hookRoutes } from "../../hooks/routes.js";
import { createLogger } from "../../runtime/log.js";
import { fleetRequest } from "../../testkit/fleet.js";
import { goldenCases } from "../support/golden.js";
import { freePorts, REPO_ROOT } from "../../testkit/kube.js";
import { onStop } from "../../testkit/processes.js";
import { postText, RawConnection } from "./support/raw-http.js";
import { tally } from "./support/tally.js";

const clock = () => new Date("2026-11-21T12:00:00Z");
const STACK_TRACE = /\n\s+at |\.[cm]?[jt]s:\d+:\d+/;
const goldenRequest = () =>
  goldenCases("cspc-sync")
    .find((c) => c.name === "fixed-point")!
    .read("request.yaml") as object;

/** A route that fails the way a bug would: not a BadRequestError. */
const brokenRoute: HookRoute = {
  path: "/hooks/broken",
  name: "broken",
  handle: () => {
    throw new TypeError("Cannot read properties of undefined (reading 'raidGroups')");
  },
};

function capturingApp(options: { bodyLimit?: string } = {}) {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({
    level: "debug",
    sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
  });
  const app = makeApp({ routes: [...hookRoutes(), brokenRoute], clock, log, ...options });
  return { app, lines };
}

/** A raw POST through node:http (supertest would re-encode a Buffer body). */
function rawPost(
  port: number,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        path,
        method: "POST",
        headers: { ...headers, "content-length": String(body.length) },
        agent: false,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("hook server: logs, request ids and error answers", () => {
  it("logs one JSON line per answered request with the request id, the hook and the object's namespace/name", async () => {
    const { app, lines } = capturingApp();
    const res = await request(app)
      .post("/hooks/cspc-sync")
      .set("X-Request-Id", "mc-7f3a.1")
      .send(goldenRequest())
      .expect(200);
    expect(res.headers["x-request-id"]).to.equal("mc-7f3a.1");
    const answered = lines.find((l) => l.msg === "hook answered")!;
    expect(answered).to.include({
      level: "debug",
      requestId: "mc-7f3a.1",
      hook: "cspc-sync",
      object: "openebs/cstor-pool-mirror",
      code: 200,
    });
    expect(answered.time).to.match(/^\d{4}-\d\d-\d\dT/);
  });

  it("makes up a request id when there is none or it is not a plain token, and echoes it", async () => {
    const { app, lines } = capturingApp();
    const none = await request(app).post("/hooks/cspc-sync").send(goldenRequest()).expect(200);
    const odd = await request(app)
      .post("/hooks/cspc-sync")
      .set("X-Request-Id", `a b\u00e9${"x".repeat(200)}`)
      .send(goldenRequest())
      .expect(200);
    for (const res of [none, odd]) {
      expect(res.headers["x-request-id"]).to.match(/^[0-9a-f-]{36}$/);
      expect(
        lines.some((l) => l.requestId === res.headers["x-request-id"] && l.msg === "hook answered"),
      ).to.equal(true);
    }
  });

  it("logs a client's mistake as a warning with its message and object, and answers 400 with the message", async () => {
    const { app, lines } = capturingApp();
    const body = goldenRequest() as { parent: { spec: unknown } };
    body.parent.spec = { pools: "all of them" };
    const res = await request(app)
      .post("/hooks/cspc-sync")
      .set("X-Request-Id", "r-400")
      .send(body)
      .expect(400);
    expect(res.body.error).to.match(/spec.pools must be of type array/);
    expect(lines.find((l) => l.requestId === "r-400" && l.level === "warn")).to.include({
      msg: "bad hook request",
      object: "openebs/cstor-pool-mirror",
    });
  });

  it("answers a bug with a 500 that names the hook but carries no stack trace; the stack goes to the log", async () => {
    const { app, lines } = capturingApp();
    const res = await request(app)
      .post("/hooks/broken")
      .set("X-Request-Id", "r-500")
      .send({ parent: { metadata: { namespace: "ns", name: "c" } } })
      .expect(500);
    expect(res.body).to.deep.equal({
      error: "internal error in broken: Cannot read properties of undefined (reading 'raidGroups')",
    });
    expect(res.text).to.not.match(STACK_TRACE);
    const logged = lines.find((l) => l.requestId === "r-500" && l.level === "error")!;
    expect(logged).to.include({ msg: "hook failed", object: "ns/c" });
    expect(logged.stack).to.match(/TypeError: Cannot read properties[\s\S]*\n\s+at /);
  });

  it("refuses to start with a body limit it cannot read, instead of having no limit at all", () => {
    expect(parseByteSize("32mb")).to.equal(32 * 1024 * 1024);
    expect(parseByteSize("512 KB")).to.equal(512 * 1024);
    for (const bad of ["lots", "", "-1mb", "32 MiB", "0"]) {
      expect(() => capturingApp({ bodyLimit: bad }), bad).to.throw(/is not a size: use e.g. 32mb/);
    }
  });
});

describe("hook server: bodies it cannot read", () => {
  let server: import("node:http").Server;
  let port: number;
  before(async () => {
    server = capturingApp().app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  it("stops inflating a gzip bomb at the body limit: 413, and the server keeps answering", async () => {
    const bomb = gzipSync(Buffer.alloc(256 * 1024 * 1024, 0x20));
    expect(bomb.length).to.be.below(300_000);
    const res = await rawPost(
      port,
      "/hooks/cspc-sync",
      { "content-type": "application/json", "content-encoding": "gzip" },
      bomb,
    );
    expect(res.status).to.equal(413);
    expect(JSON.parse(res.text).error).to.contain(`larger than the ${DEFAULT_BODY_LIMIT} limit`);
    const ok = await rawPost(
      port,
      "/hooks/cspc-sync",
      { "content-type": "application/json" },
      Buffer.from(JSON.stringify(goldenRequest())),
    );
    expect(ok.status).to.equal(200);
  });

  it("answers an unknown Content-Encoding or charset, or a body that does not inflate, with a 4xx that says so", async () => {
    const json = { "content-type": "application/json" };
    const cases: [Record<string, string>, Buffer, number, RegExp][] = [
      [
        { ...json, "content-encoding": "compress" },
        Buffer.from("{}"),
        415,
        /request body could not be read: unsupported content encoding "compress"/,
      ],
      [
        { ...json, "content-encoding": "br" },
        Buffer.from("not brotli"),
        400,
        /request body could not be read: Decompression failed/,
      ],
      [
        { "content-type": "application/json; charset=klingon" },
        Buffer.from("{}"),
        415,
        /request body could not be read: unsupported charset "KLINGON"/,
      ],
      [
        { ...json, "content-encoding": "gzip" },
        Buffer.from("not gzip"),
        400,
        /request body could not be read: incorrect header check/,
      ],
      [
        { "content-type": "application/json; charset=utf-16le" },
        Buffer.from("{}", "utf16le"),
        400,
        /request has no parent/,
      ],
    ];
    for (const [headers, body, status, says] of cases) {
      const res = await rawPost(port, "/hooks/cspc-sync", headers, body);
      expect(res.status, JSON.stringify(headers)).to.equal(status);
      expect(JSON.parse(res.text).error).to.match(says);
    }
    tally.badInputs("HTTP bodies (bomb, encodings, charsets)", cases.length + 1);
  });

  it("never answers 5xx or a stack trace to random methods, paths, headers and bodies", async () => {
    const paths = [
      "/hooks/cspc-sync",
      "/hooks/cspi-sync",
      "/admission/cspc",
      "/readyz",
      "/metrics",
      "/%",
      "/hooks/%E0%A4%A",
      "/../../etc/passwd",
      "//hooks//cspc-sync",
      "/hooks/cspc-sync?x=%00",
    ];
    const headerSets = [
      {},
      { "content-type": "application/json" },
      { "content-type": "text/plain; charset=latin1" },
      { "content-type": "application/json", "content-encoding": "deflate" },
      { "content-type": "application/json", "content-encoding": "identity, gzip" },
      { "content-type": "multipart/form-data; boundary=x" },
      { "content-type": "application/json", expect: "100-continue" },
    ];
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"),
        fc.constantFrom(...paths),
        fc.constantFrom(...headerSets),
        fc.oneof(
          fc.uint8Array({ maxLength: 512 }).map((b) => Buffer.from(b)),
          fc.constant(Buffer.from(JSON.stringify(goldenRequest()))),
        ),
        async (method, path, headers, body) => {
          runs++;
          const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
            const req = httpRequest(
              {
                host: "127.0.0.1",
                port,
                path,
                method,
                headers: { ...headers, "content-length": String(body.length) },
                agent: false,
              },
              (r) => {
                let text = "";
                r.setEncoding("utf8");
                r.on("data", (c: string) => (text += c));
                r.on("end", () => resolve({ status: r.statusCode ?? 0, text }));
              },
            );
            req.on("error", reject);
            req.end(body);
          });
          expect(
            res.status,
            `${method} ${path} ${JSON.stringify(headers)}: ${res.text.slice(0, 200)}`,
          ).to.be.below(500);
          expect(res.text).to.not.match(STACK_TRACE);
        },
      ),
      { numRuns: 300, seed: 20261121 },
    );
    tally.fuzz("HTTP layer (method × path × headers × body)", runs, new Map());
  });
});

describe("hook server: timeouts", function () {
  this.timeout(20_000);
  let listening: Listening | undefined;
  afterEach(async () => {
    await listening?.close();
    listening = undefined;
  });

  /** The real listener with the production timeouts scaled down, so the test takes seconds, not minutes. */
  async function short(): Promise<number> {
    const { app } = capturingApp();
    listening = await listen(app, {
      port: 0,
      log: createLogger({ level: "silent" }),
      timeouts: { keepAliveMs: 60_000, headersMs: 400, requestMs: 800, checkIntervalMs: 100 },
    });
    return (listening.servers[0].address() as AddressInfo).port;
  }

  it("cuts off a client that never finishes its headers (slowloris) with 408", async () => {
    const conn = await RawConnection.open(await short());
    await conn.send("POST /hooks/cspc-sync HTTP/1.1\r\nHost: hooks\r\nX-Slow: ");
    const res = await conn.response();
    expect(res.status).to.equal(408);
    await conn.closedByServer();
  });

  it("cuts off a client that never finishes its body with 408", async () => {
    const conn = await RawConnection.open(await short());
    await conn.send(postText("/hooks/cspc-sync", JSON.stringify(goldenRequest())).head);
    const res = await conn.response();
    expect(res.status).to.equal(408);
    await conn.closedByServer();
  });

  it("keeps an idle keep-alive connection well past the header and request timeouts and answers on it again", async () => {
    const conn = await RawConnection.open(await short());
    await conn.send("GET /healthz HTTP/1.1\r\nHost: hooks\r\n\r\n");
    expect((await conn.response()).status).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(conn.closed).to.equal(false);
    await conn.send("GET /healthz HTTP/1.1\r\nHost: hooks\r\n\r\n");
    expect((await conn.response()).status).to.equal(200);
    conn.close();
  });
});

describe("hook server process (node hooks/main.ts): keep-alive and drain on SIGTERM", function () {
  this.timeout(60_000);
  let child: ChildProcess;
  let port: number;
  const stdout: string[] = [];
  let exited: Promise<number | null>;

  before(async () => {
    [port] = await freePorts(1);
    child = spawn(process.execPath, ["--import", "tsx", "hooks/main.ts"], {
      cwd: REPO_ROOT,
      env: { ...process.env, PORT: String(port), LOG_LEVEL: "debug", DRAIN_SECONDS: "20" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    onStop(async () => void child.kill("SIGKILL"));
    exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
    let partial = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop()!;
      stdout.push(...lines);
    });
    for (let i = 0; i < 200 && !stdout.some((l) => l.includes("hook server listening")); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(stdout.join("\n")).to.include("hook server listening");
  });

  it("tells clients it keeps idle connections 95 s (Go keeps them 90 s) and still answers after Node's default 5 s", async () => {
    const conn = await RawConnection.open(port);
    await conn.send("GET /healthz HTTP/1.1\r\nHost: hooks\r\n\r\n");
    const first = await conn.response();
    expect(first.headers["keep-alive"]).to.equal("timeout=95");
    await new Promise((resolve) => setTimeout(resolve, 6000));
    await conn.send("GET /healthz HTTP/1.1\r\nHost: hooks\r\n\r\n");
    expect((await conn.response()).status).to.equal(200);
    conn.close();
  });

  it("on SIGTERM finishes the request in flight, answers /readyz 503, refuses new connections, then exits 0", async () => {
    const body = JSON.stringify(fleetRequest({ pools: 3, withCspis: true }));
    const { head, rest } = postText("/hooks/cspc-sync", body);
    const inFlight = await RawConnection.open(port);
    await inFlight.send(head);
    const probe = await RawConnection.open(port);
    await probe.send("GET /readyz HTTP/1.1\r\nHost: kubelet\r\n");
    // One full round trip after both: the server has read their bytes, so both requests are under way.
    const sync = await RawConnection.open(port);
    await sync.send("GET /healthz HTTP/1.1\r\nHost: hooks\r\nConnection: close\r\n\r\n");
    expect((await sync.response()).status).to.equal(200);

    child.kill("SIGTERM");
    let refused = false;
    for (let i = 0; i < 100 && !refused; i++) {
      refused = await RawConnection.open(port).then(
        (c) => (c.close(), false),
        (err: NodeJS.ErrnoException) => err.code === "ECONNREFUSED",
      );
      if (!refused) await new Promise((r) => setTimeout(r, 20));
    }
    expect(refused, "new connections are refused once draining").to.equal(true);

    await probe.send("\r\n");
    const ready = await probe.response();
    expect(ready.status).to.equal(503);
    expect(JSON.parse(ready.body)).to.deep.equal({ status: "draining" });
    expect(ready.headers.connection).to.equal("close");

    await inFlight.send(rest);
    const answer = await inFlight.response();
    expect(answer.status).to.equal(200);
    expect(JSON.parse(answer.body).children).to.have.length(3 + 12);
    await inFlight.closedByServer();

    expect(await exited).to.equal(0);
    const logs = stdout.filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(
      logs.every(
        (l) => l.component === "hook-server" && typeof l.time === "string" && typeof l.level === "string",
      ),
    ).to.equal(true);
    expect(logs.map((l) => l.msg)).to.include.members(["draining", "stopped"]);
    expect(
      logs.find((l) => l.msg === "hook answered" && l.code === 200 && l.hook === "cspc-sync"),
    ).to.have.property("requestId");
    tally.fault("hook server SIGTERM mid-request", true);
  });
});
