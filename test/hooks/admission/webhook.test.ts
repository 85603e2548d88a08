// The webhook end to end against a real kube-apiserver: the apiserver calls our HTTPS server with real
// AdmissionReviews, our lookups read the cluster as the hook server's ServiceAccount with the shipped RBAC,
// and `kubectl` shows the user our messages and warnings. The webhook is registered for objects labelled
// admission-e2e=true only, so the rest of the shared test cluster never meets it. kubectl gets JSON: YAML 1.2
// writers leave `off` unquoted, which kubectl (YAML 1.1) reads as false.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { API_VERSION, KIND, LABEL } from "../../../api/constants.js";
import { KubeClusterLookup } from "../../../hooks/admission/kube-lookup.js";
import { LookupError } from "../../../lib/admission/lookup.js";
import { makeApp } from "../../../hooks/http/app.js";
import { hookRoutes } from "../../../hooks/routes.js";
import { createLogger } from "../../../runtime/log.js";
import { INSTALL_NAMESPACE, projectInstalled, repoPath, type KubeCluster } from "../../../testkit/kube.js";
import { onStop } from "../../../testkit/processes.js";

const NS = INSTALL_NAMESPACE;
const WEBHOOK = "cstor-admission-e2e";
const SELECTED = { "admission-e2e": "true" };
const NODE_A = "admission-e2e-node-a";
const NODE_B = "admission-e2e-node-b";
const BD = (name: string, host: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: API_VERSION,
  kind: KIND.blockDevice,
  metadata: { name, namespace: NS, labels: { [LABEL.hostname]: host } },
  spec: {
    path: `/dev/${name}`,
    capacity: { storage: 10 * 1024 ** 3 },
    nodeAttributes: { nodeName: host },
    ...extra,
  },
  status: { state: "Active", claimState: "Unclaimed" },
});
const cspc = (name: string, pools: { host: string; devices: string[]; type?: string; key?: string }[]) => ({
  apiVersion: API_VERSION,
  kind: KIND.cspc,
  metadata: { name, namespace: NS, labels: SELECTED },
  spec: {
    pools: pools.map((p) => ({
      nodeSelector: { [p.key ?? LABEL.hostname]: p.host },
      raidGroups: [
        { type: p.type ?? "stripe", blockDevices: p.devices.map((blockDeviceName) => ({ blockDeviceName })) },
      ],
    })),
  },
});

async function selfSignedCertificate(dir: string): Promise<{ key: string; cert: string }> {
  const key = join(dir, "admission-e2e.key");
  const cert = join(dir, "admission-e2e.crt");
  await promisify(execFile)("openssl", [
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "1",
    "-subj",
    "/CN=cstor-admission-e2e",
    "-addext",
    "subjectAltName=IP:127.0.0.1",
    "-keyout",
    key,
    "-out",
    cert,
  ]);
  return { key: readFileSync(key, "utf8"), cert: readFileSync(cert, "utf8") };
}

describe("admission webhook behind a real kube-apiserver", function () {
  this.timeout(180_000);
  let cluster: KubeCluster;
  let server: Server;

  const apply = (object: unknown, ...flags: string[]) =>
    cluster.kubectl(["apply", ...flags, "-f", "-"], { input: JSON.stringify(object), allowFailure: true });

  before(async () => {
    cluster = await projectInstalled();
    await cluster.kubectl([
      "apply",
      "--server-side",
      "-f",
      repoPath("metacontroller/components/admission/hook-server-rbac.yaml"),
    ]);
    const identity = await cluster.serviceAccount(NS, "cstor-pool-hooks");
    const lookup = new KubeClusterLookup(cluster.kubeConfig(identity));
    const app = makeApp({
      routes: hookRoutes(undefined, { lookup: () => lookup }),
      clock: () => new Date(),
      log: createLogger({ level: "silent" }),
    });
    const tls = await selfSignedCertificate(cluster.dir);
    server = createServer(tls, app);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };

    for (const [name, extra] of [
      [NODE_A, { "kubernetes.io/hostName": NODE_A }],
      [NODE_B, {}],
    ] as const) {
      await cluster.kubectl(["apply", "-f", "-"], {
        input: JSON.stringify({
          apiVersion: "v1",
          kind: "Node",
          metadata: { name, labels: { [LABEL.hostname]: name, ...extra } },
        }),
      });
    }
    const devices = [
      BD("adm-e2e-a1", NODE_A),
      BD("adm-e2e-a2", NODE_A),
      BD("adm-e2e-b1", NODE_B),
      BD("adm-e2e-ext4", NODE_B, { filesystem: { fsType: "ext4" } }),
    ];
    await cluster.kubectl(["apply", "-f", "-"], {
      input: JSON.stringify({ apiVersion: "v1", kind: "List", items: devices }),
    });

    await cluster.kubectl(["apply", "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingWebhookConfiguration",
        metadata: { name: WEBHOOK },
        webhooks: [
          {
            name: "cspc.validation.cstor-pool.openebs.io",
            admissionReviewVersions: ["v1"],
            sideEffects: "None",
            failurePolicy: "Fail",
            timeoutSeconds: 5,
            objectSelector: { matchLabels: SELECTED },
            rules: [
              {
                apiGroups: ["openebs.io"],
                apiVersions: ["v1alpha1"],
                operations: ["CREATE", "UPDATE", "DELETE"],
                resources: ["cstorpoolclusters"],
                scope: "Namespaced",
              },
            ],
            clientConfig: {
              url: `https://127.0.0.1:${port}/admission/cspc`,
              caBundle: Buffer.from(tls.cert).toString("base64"),
            },
          },
        ],
      }),
    });
    onStop(async () => {
      server.close();
    });
  });

  after(async () => {
    if (!cluster) return;
    await cluster.kubectl(["delete", "validatingwebhookconfiguration", WEBHOOK, "--ignore-not-found"]);
    await cluster.kubectl([
      "delete",
      "cspc,cspi",
      "-n",
      NS,
      "-l",
      "admission-e2e=true",
      "--ignore-not-found",
    ]);
    await cluster.kubectl([
      "delete",
      "bd",
      "-n",
      NS,
      "adm-e2e-a1",
      "adm-e2e-a2",
      "adm-e2e-b1",
      "adm-e2e-ext4",
      "--ignore-not-found",
    ]);
    await cluster.kubectl(["delete", "node", NODE_A, NODE_B, "--ignore-not-found"]);
    await cluster.kubectl([
      "delete",
      "serviceaccount",
      "admission-e2e-nobody",
      "-n",
      NS,
      "--ignore-not-found",
    ]);
    // The shared cluster is the default install, where the hook server has no rights (test/integration/rbac.test.ts).
    await cluster.kubectl([
      "delete",
      "--ignore-not-found",
      "-f",
      repoPath("metacontroller/components/admission/hook-server-rbac.yaml"),
    ]);
  });

  it("refuses a CSPC whose device carries a filesystem; kubectl shows the device and the fix", async () => {
    const res = await apply(
      cspc("adm-e2e-bad", [{ host: NODE_B, devices: ["adm-e2e-ext4"] }]),
      "--dry-run=server",
    );
    expect(res.exitCode).to.equal(1);
    expect(res.stderr).to.include(
      'admission webhook "cspc.validation.cstor-pool.openebs.io" denied the request: CStorPoolCluster openebs/adm-e2e-bad: spec.pools[0]',
    );
    expect(res.stderr).to.match(
      /block device adm-e2e-ext4 carries a filesystem \(ext4\): if its data is not needed wipe it \(wipefs -a \/dev\/adm-e2e-ext4\)/,
    );
  });

  it("accepts a valid CSPC and passes warnings on to kubectl", async () => {
    const res = await apply(
      cspc("adm-e2e-twin", [{ host: NODE_A, key: "kubernetes.io/hostName", devices: ["adm-e2e-a1"] }]),
      "--dry-run=server",
    );
    expect(res.exitCode, res.stderr).to.equal(0);
    expect(res.stderr).to.match(
      /Warning: spec\.pools\[0\] \(nodeSelector kubernetes\.io\/hostName=admission-e2e-node-a\) uses label key kubernetes\.io\/hostName/,
    );
  });

  it("refuses removing a live pool's device and deleting a CSPC whose pool holds volumes; allows the delete once they are gone", async () => {
    const created = await apply(
      cspc("adm-e2e-live", [{ host: NODE_A, devices: ["adm-e2e-a1", "adm-e2e-a2"] }]),
    );
    expect(created.exitCode, created.stderr).to.equal(0);
    const pool = {
      apiVersion: API_VERSION,
      kind: KIND.cspi,
      metadata: {
        name: "adm-e2e-live-1a2b3c",
        namespace: NS,
        labels: { [LABEL.cspc]: "adm-e2e-live", [LABEL.hostname]: NODE_A, ...SELECTED },
      },
      spec: {
        hostName: NODE_A,
        nodeSelector: { [LABEL.hostname]: NODE_A },
        poolConfig: { compression: "off", roThresholdLimit: 85 },
        raidGroups: [
          {
            type: "stripe",
            blockDevices: [{ blockDeviceName: "adm-e2e-a1" }, { blockDeviceName: "adm-e2e-a2" }],
          },
        ],
      },
    };
    await cluster.kubectl(["apply", "-f", "-"], { input: JSON.stringify(pool) });
    const setVolumes = (n: number) =>
      cluster.kubectl([
        "patch",
        "cspi",
        pool.metadata.name,
        "-n",
        NS,
        "--subresource=status",
        "--type=merge",
        "-p",
        JSON.stringify({ status: { phase: "ONLINE", provisionedReplicas: n } }),
      ]);
    await setVolumes(3);

    const refused = await cluster.kubectl(["delete", "cspc", "adm-e2e-live", "-n", NS], {
      allowFailure: true,
    });
    expect(refused.exitCode).to.equal(1);
    expect(refused.stderr).to.include("Error from server (Forbidden)");
    expect(refused.stderr).to.include(
      `pool adm-e2e-live-1a2b3c on node ${NODE_A} holds 3 volume replicas (as its node daemon reports)`,
    );

    const shrunk = await apply(cspc("adm-e2e-live", [{ host: NODE_A, devices: ["adm-e2e-a1"] }]));
    expect(shrunk.exitCode).to.equal(1);
    expect(shrunk.stderr).to.match(
      /\(pool adm-e2e-live-1a2b3c\): raidGroups\[0\] \(stripe: adm-e2e-a1, adm-e2e-a2\): block device adm-e2e-a2 was removed; data on it would be lost: put it back/,
    );

    const relabelled = await cluster.kubectl(["label", "cspc", "adm-e2e-live", "-n", NS, "team=storage"], {
      allowFailure: true,
    });
    expect(relabelled.exitCode, `a metadata-only update is allowed: ${relabelled.stderr}`).to.equal(0);

    await setVolumes(0);
    const deleted = await cluster.kubectl(["delete", "cspc", "adm-e2e-live", "-n", NS], {
      allowFailure: true,
    });
    expect(deleted.exitCode, deleted.stderr).to.equal(0);
    expect(deleted.stderr).to.include(
      `Warning: deleting CStorPoolCluster openebs/adm-e2e-live destroys its pools adm-e2e-live-1a2b3c (node ${NODE_A})`,
    );
  });

  it("lists through the shipped RBAC, and a ServiceAccount without it gets a message naming the permission", async () => {
    const allowed = new KubeClusterLookup(
      cluster.kubeConfig(await cluster.serviceAccount(NS, "cstor-pool-hooks")),
    );
    const signal = new AbortController().signal;
    const devices = await allowed.blockDevices(NS, signal);
    expect(devices.map((d) => d.metadata.name)).to.include.members(["adm-e2e-a1", "adm-e2e-ext4"]);
    expect((await allowed.nodes(signal)).find((n) => n.metadata.name === NODE_A)?.metadata.labels).to.include(
      { "kubernetes.io/hostName": NODE_A },
    );

    await cluster.kubectl(["create", "serviceaccount", "admission-e2e-nobody", "-n", NS], {
      allowFailure: true,
    });
    const nobody = new KubeClusterLookup(
      cluster.kubeConfig(await cluster.serviceAccount(NS, "admission-e2e-nobody")),
    );
    const failure = await nobody.blockDevices(NS, signal).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).to.be.instanceOf(LookupError);
    expect((failure as LookupError).cause).to.match(
      /^forbidden \(403\): blockdevices\.openebs\.io is forbidden: User "system:serviceaccount:openebs:admission-e2e-nobody" cannot list/,
    );
    expect((failure as LookupError).hint).to.include(
      "kubectl auth can-i list blockdevices.openebs.io -n openebs",
    );
  });

  it("a lookup whose deadline has passed is cancelled, not left running", async () => {
    const lookup = new KubeClusterLookup(cluster.kubeConfig());
    const failure = await lookup.nodes(AbortSignal.abort()).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).to.be.instanceOf(LookupError);
    expect((failure as LookupError).cause).to.equal("cancelled at the review's deadline");
  });
});
