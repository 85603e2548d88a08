// docs/install.md "Without cert-manager": the openssl recipe there, run as written (argument arrays, same
// arguments), gives a certificate the hook server can serve and the apiserver can trust for the webhook's
// Service name; the Secret and the caBundle patch are accepted by the real apiserver (server dry run).
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { parseAllDocuments } from "yaml";
import { makeApp } from "../../hooks/http/app.js";
import { listen } from "../../hooks/http/listen.js";
import { hookRoutes } from "../../hooks/routes.js";
import { createLogger } from "../../runtime/log.js";
import { INSTALL_NAMESPACE, projectInstalled, repoPath, type KubeCluster } from "../../testkit/kube.js";

const run = promisify(execFile);
const SERVICE_DNS = `cstor-pool-hooks.${INSTALL_NAMESPACE}.svc`;

describe("integration: admission TLS without cert-manager (docs/install.md)", function () {
  this.timeout(20 * 60_000);
  let cluster: KubeCluster;
  let dir: string;
  const file = (name: string) => join(dir, name);

  before(async () => {
    cluster = await projectInstalled();
    dir = mkdtempSync(join(tmpdir(), "cstor-tls-"));
    const openssl = (...args: string[]) => run("openssl", args, { cwd: dir });
    await openssl(
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "3650",
      "-subj",
      "/CN=cstor-pool-hooks-ca",
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
    );
    await openssl(
      "req",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-subj",
      `/CN=${SERVICE_DNS}`,
      "-keyout",
      "tls.key",
      "-out",
      "tls.csr",
    );
    writeFileSync(file("san.ext"), `subjectAltName=DNS:${SERVICE_DNS},DNS:${SERVICE_DNS}.cluster.local\n`);
    await openssl(
      "x509",
      "-req",
      "-in",
      "tls.csr",
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-days",
      "825",
      "-extfile",
      "san.ext",
      "-out",
      "tls.crt",
    );
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("makes a serving certificate for the Service's DNS names, signed by the CA", async () => {
    const { stdout } = await run("openssl", [
      "x509",
      "-in",
      file("tls.crt"),
      "-noout",
      "-ext",
      "subjectAltName",
    ]);
    expect(stdout).to.contain(`DNS:${SERVICE_DNS}`).and.to.contain(`DNS:${SERVICE_DNS}.cluster.local`);
    const verified = await run("openssl", ["verify", "-CAfile", file("ca.crt"), file("tls.crt")]);
    expect(verified.stdout.trim()).to.equal(`${file("tls.crt")}: OK`);
  });

  it("lets the hook server answer HTTPS that a client trusting only the CA accepts under the Service's name", async () => {
    const app = makeApp({
      routes: hookRoutes(),
      clock: () => new Date(),
      log: createLogger({ level: "silent" }),
    });
    const listening = await listen(app, {
      port: 0,
      tls: { port: 0, certFile: file("tls.crt"), keyFile: file("tls.key") },
      log: createLogger({ level: "silent" }),
    });
    try {
      const port = (listening.servers[1].address() as AddressInfo).port;
      const body = await new Promise<string>((resolve, reject) => {
        const req = request(
          {
            host: "127.0.0.1",
            port,
            path: "/healthz",
            ca: readFileSync(file("ca.crt")),
            servername: SERVICE_DNS,
          },
          (res) => {
            let text = "";
            res.on("data", (chunk) => (text += chunk));
            res.on("end", () => resolve(text));
          },
        );
        req.on("error", reject);
        req.end();
      });
      expect(JSON.parse(body)).to.deep.equal({ status: "ok" });
    } finally {
      await listening.close();
    }
  });

  it("gives a Secret and a caBundle patch the apiserver accepts for the shipped webhook", async () => {
    await cluster.kubectl([
      "-n",
      INSTALL_NAMESPACE,
      "create",
      "secret",
      "tls",
      "cstor-pool-hooks-tls",
      `--cert=${file("tls.crt")}`,
      `--key=${file("tls.key")}`,
      "--dry-run=server",
    ]);
    const { stdout } = await cluster.kubectl(["kustomize", repoPath("metacontroller/manual-tls")]);
    const webhook = parseAllDocuments(stdout)
      .map((d) => d.toJS())
      .find((o) => o.kind === "ValidatingWebhookConfiguration");
    const caBundle = readFileSync(file("ca.crt")).toString("base64");
    webhook.webhooks[0].clientConfig.caBundle = caBundle;
    const applied = await cluster.kubectl(
      ["apply", "--server-side", "--dry-run=server", "-o", "json", "-f", "-"],
      { input: JSON.stringify(webhook) },
    );
    expect(JSON.parse(applied.stdout).webhooks[0].clientConfig.caBundle).to.equal(caBundle);
  });
});
