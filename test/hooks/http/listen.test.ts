import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { makeApp } from "../../../hooks/http/app.js";
import { listen, tlsFromEnv, type Listening } from "../../../hooks/http/listen.js";
import { hookRoutes } from "../../../hooks/routes.js";
import { createLogger } from "../../../runtime/log.js";

function selfSigned(dir: string, cn: string): void {
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      `/CN=${cn}`,
      "-keyout",
      join(dir, "tls.key"),
      "-out",
      join(dir, "tls.crt"),
    ],
    { stdio: "ignore" },
  );
}

function get(port: number, path: string): Promise<{ status: number; issuer: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, rejectUnauthorized: false, agent: false }, (res) => {
      const cert = (res.socket as import("node:tls").TLSSocket).getPeerCertificate();
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, issuer: cert.subject.CN as string }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("hook server listeners", () => {
  let dir: string;
  let listening: Listening | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "hooks-tls-"));
  });
  afterEach(async () => {
    await listening?.close();
    listening = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves the same app over HTTPS for admission, and picks up a renewed certificate", async () => {
    selfSigned(dir, "first");
    const app = makeApp({
      routes: hookRoutes(),
      clock: () => new Date(),
      log: createLogger({ level: "silent" }),
    });
    listening = await listen(app, {
      port: 0,
      tls: { port: 0, certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") },
      log: createLogger({ level: "silent" }),
      certPollMs: 50,
    });
    const port = (listening.servers[1].address() as AddressInfo).port;
    expect(await get(port, "/healthz")).to.deep.equal({ status: 200, issuer: "first" });
    selfSigned(dir, "renewed");
    let seen = "";
    for (let i = 0; i < 100 && seen !== "renewed"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      seen = (await get(port, "/healthz")).issuer;
    }
    expect(seen).to.equal("renewed");
  });

  it("gives both servers keep-alive longer than Go's 90 s idle timeout", async () => {
    const app = makeApp({
      routes: hookRoutes(),
      clock: () => new Date(),
      log: createLogger({ level: "silent" }),
    });
    listening = await listen(app, { port: 0, log: createLogger({ level: "silent" }) });
    expect(listening.servers[0].keepAliveTimeout).to.be.greaterThan(90_000);
    // Node applies headersTimeout to requests, not to idle connections; above requestTimeout it swaps the two.
    expect(listening.servers[0].headersTimeout).to.be.at.most(listening.servers[0].requestTimeout);
  });

  it("takes TLS from the environment all together or not at all", () => {
    expect(tlsFromEnv({})).to.equal(undefined);
    expect(tlsFromEnv({ TLS_PORT: "8443", TLS_CERT_FILE: "/c", TLS_KEY_FILE: "/k" })).to.deep.equal({
      port: 8443,
      certFile: "/c",
      keyFile: "/k",
    });
    expect(() => tlsFromEnv({ TLS_PORT: "8443" })).to.throw(
      /TLS needs TLS_PORT, TLS_CERT_FILE and TLS_KEY_FILE together/,
    );
  });
});
