// Memory of the hook server process under hostile and large bodies, measured from /proc as the kubelet sees
// it: the Deployment's limit is 512 Mi (metacontroller/base/hook-server.yaml). A body under the byte limit can
// still cost 35 times its size once parsed (31 MB of `{},` is ten million objects), so the server estimates
// what a body costs before parsing it and bounds that per request and across the requests in flight.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { gzipSync } from "node:zlib";
import { expect } from "chai";
import { parse } from "yaml";
import { DEFAULT_BODY_LIMIT, parseByteSize } from "../../hooks/http/app.js";
import { fleetRequest } from "../../testkit/fleet.js";
import { freePorts, REPO_ROOT } from "../../testkit/kube.js";
import { onStop } from "../../testkit/processes.js";
import { tally } from "./support/tally.js";

const MiB = 1024 * 1024;

/** The memory limit of the hook server's container, read from the manifest users apply. */
function podMemoryLimitBytes(): number {
  const docs = readFileSync(`${REPO_ROOT}/metacontroller/base/hook-server.yaml`, "utf8")
    .split(/^---$/m)
    .map((d) => parse(d) as { kind?: string });
  const deployment = docs.find((d) => d?.kind === "Deployment") as {
    spec: { template: { spec: { containers: { resources: { limits: { memory: string } } }[] } } };
  };
  const limit = deployment.spec.template.spec.containers[0].resources.limits.memory;
  const match = /^(\d+)Mi$/.exec(limit);
  if (!match) throw new Error(`unexpected memory limit ${limit}`);
  return Number(match[1]) * MiB;
}

interface Answer {
  status: number;
  retryAfter?: string;
  error?: string;
}

function post(
  port: number,
  path: string,
  body: Buffer,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        port,
        method: "POST",
        path,
        headers: { "content-type": "application/json", "content-length": String(body.length), ...headers },
      },
      (res) => {
        let text = "";
        res
          .setEncoding("utf8")
          .on("data", (chunk: string) => (text += chunk.length + text.length < 4096 ? chunk : ""));
        res.on("end", () => {
          let error: string | undefined;
          try {
            error = (JSON.parse(text) as { error?: string }).error;
          } catch {
            // a 200 answer cut short above: only its status matters here
          }
          resolve({
            status: res.statusCode!,
            ...(res.headers["retry-after"] ? { retryAfter: String(res.headers["retry-after"]) } : {}),
            ...(error ? { error } : {}),
          });
        });
      },
    );
    // The server may answer (413, 503) and close before the whole body is sent.
    req.on("error", (error: NodeJS.ErrnoException) =>
      error.code === "EPIPE" || error.code === "ECONNRESET" ? resolve({ status: -1 }) : reject(error),
    );
    req.end(body);
  });
}

function healthz(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    httpRequest({ port, path: "/healthz", timeout: 10_000 }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode!));
    })
      .on("timeout", () => reject(new Error("/healthz did not answer within 10 s")))
      .on("error", reject)
      .end();
  });
}

/** `unit` repeated to about `bytes`, inside a JSON list. */
function junk(unit: string, bytes: number): Buffer {
  return Buffer.from(`[${unit.repeat(Math.floor((bytes - 2) / unit.length))}0]`);
}

function distinctKeys(bytes: number): Buffer {
  const parts: string[] = [];
  let size = 2;
  for (let i = 0; size < bytes - 32; i++) {
    const part = `{"k${i.toString(36)}":0}`;
    parts.push(part);
    size += part.length + 1;
  }
  return Buffer.from(`[${parts.join(",")}]`);
}

/** A legitimate request of about 12.8 MB: the 1,000-pool fleet with block device names of 124 characters. */
function largeLegitimate(): Buffer {
  const text = JSON.stringify(fleetRequest({ pools: 1000, withCspis: true }));
  return Buffer.from(
    text.replace(/blockdevice-(\d{4})-(\d)/g, (_m, pool: string, d: string) =>
      `blockdevice-${pool}-${d}-`.padEnd(124, "x"),
    ),
  );
}

describe("hook server process: memory under hostile and large bodies (RSS from /proc)", function () {
  this.timeout(180_000);
  let child: ChildProcess;
  let port: number;
  let peakRss = 0;
  let sampler: NodeJS.Timeout;

  const rss = (): number =>
    Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))![1]) * 1024;

  before(async () => {
    [port] = await freePorts(1);
    child = spawn(process.execPath, ["--import", "tsx", "hooks/main.ts"], {
      cwd: REPO_ROOT,
      env: { ...process.env, PORT: String(port), LOG_LEVEL: "error" },
      stdio: ["ignore", "ignore", "inherit"],
    });
    onStop(async () => void child.kill("SIGKILL"));
    for (let i = 0; i < 400; i++) {
      if (await healthz(port).catch(() => 0)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await healthz(port)).to.equal(200);
    sampler = setInterval(() => {
      try {
        peakRss = Math.max(peakRss, rss());
      } catch {
        // the process is gone: the assertions below say so
      }
    }, 10);
  });

  after(() => {
    clearInterval(sampler);
    child.kill("SIGKILL");
  });

  it("stays under the pod's memory limit with hostile bodies and large legitimate requests at once, /healthz answering", async () => {
    const limit = podMemoryLimitBytes();
    const bodyLimit = parseByteSize(DEFAULT_BODY_LIMIT);
    const hostile: [string, Buffer, Record<string, string>?][] = [
      ["13 million empty objects", junk("{},", bodyLimit - 1e6)],
      ["13 million empty lists", junk("[],", bodyLimit - 1e6)],
      ["10 million floats", junk("0.5,", bodyLimit - 1e6)],
      ["objects of distinct keys", distinctKeys(bodyLimit - 1e6)],
      [
        "gzip of 13 million empty objects",
        gzipSync(junk("{},", bodyLimit - 1e6)),
        { "content-encoding": "gzip" },
      ],
      ["13 million empty objects, again", junk("{},", bodyLimit - 1e6)],
    ];
    const legitimate = largeLegitimate();
    expect(legitimate.length).to.be.within(12.5e6, 13e6);

    const health: Promise<number>[] = [];
    const probe = setInterval(() => health.push(healthz(port)), 20);
    const answers = await Promise.all([
      ...hostile.map(([, body, headers]) => post(port, "/hooks/cspc-sync", body, headers)),
      ...Array.from({ length: 6 }, () => post(port, "/hooks/cspc-sync", legitimate)),
    ]);
    clearInterval(probe);

    expect(child.exitCode, "the server is still running").to.equal(null);
    expect(peakRss, `peak RSS ${(peakRss / MiB).toFixed(0)} MiB`).to.be.below(limit);
    expect(await Promise.all(health), "/healthz during the storm").to.satisfy(
      (codes: number[]) => codes.length > 0 && codes.every((c) => c === 200),
    );
    hostile.forEach(([name], i) => {
      const answer = answers[i];
      expect([413, 503, -1], `${name}: ${JSON.stringify(answer)}`).to.include(answer.status);
      if (answer.status === 503) expect(answer.retryAfter, `${name}: Retry-After`).to.match(/^\d+$/);
    });
    const legitAnswers = answers.slice(hostile.length);
    for (const answer of legitAnswers) {
      // -1: turned away with a 503 the client could not read, as the server closed before the body was sent.
      expect([200, 503, -1], JSON.stringify(answer)).to.include(answer.status);
      if (answer.status === 503) expect(answer.retryAfter).to.match(/^\d+$/);
    }
    // What was turned away for lack of room is served once there is room again, as Metacontroller retries it.
    for (const answer of legitAnswers.filter((a) => a.status !== 200)) {
      expect((await post(port, "/hooks/cspc-sync", legitimate)).status, JSON.stringify(answer)).to.equal(200);
    }
    expect(peakRss, `peak RSS ${(peakRss / MiB).toFixed(0)} MiB`).to.be.below(limit);
    tally.peakRss("hook server: 6 hostile bodies of 41 MB and 6 requests of 12.8 MB at once", peakRss);
    tally.badInputs("hostile request bodies (memory)", hostile.length);
  });
});
