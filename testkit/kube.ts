// A real Kubernetes API: etcd + kube-apiserver on loopback, started once per test run on first use and shared
// by every integration test (stopped through onStop). There is no controller-manager: no garbage collector,
// no namespace controller, no default ServiceAccounts. Tests use their own namespaces and never wait for
// cascading deletion. A test's own cluster may run chosen kube-controller-manager controllers (the PV
// controllers, say).
//
// Binaries come from scripts/kube-env.sh (Debian etcd, kubectl, kube-apiserver built once from Go modules).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { request as httpsRequest } from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { API_VERSION, LABEL } from "../api/constants.js";
import { CHAP_KEY_SECRET, CHAP_KEY_SECRET_KEY } from "../lib/volume/chap.js";
import { TEST_CHAP_KEY } from "./hook-config.js";
import { onStop } from "./processes.js";

export const REPO_ROOT = new URL("../", import.meta.url).pathname;

/** Who a request is made as: a bearer token, and a kubeconfig file for kubectl holding the same token. */
export interface Identity {
  /** "admin", or "system:serviceaccount:<namespace>:<name>". */
  username: string;
  token: string;
  kubeconfig: string;
}

export interface KubectlOptions {
  /** Default: the cluster admin (system:masters). */
  as?: Identity;
  /** Written to kubectl's stdin (for `-f -`). */
  input?: string;
  /** Resolve with the non-zero exit code instead of throwing. */
  allowFailure?: boolean;
  timeoutMs?: number;
}

export interface KubectlResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

export class KubectlError extends Error {
  override readonly name = "KubectlError";
  constructor(
    readonly args: readonly string[],
    readonly result: KubectlResult,
  ) {
    super(
      `kubectl ${args.join(" ")} exited with ${result.exitCode}: ${result.stderr.trim() || result.stdout.trim()}`,
    );
  }
}

export interface ApiResponse {
  status: number;
  /** Parsed JSON when the server answered JSON, else the text. */
  body: any;
}

export interface KubeCluster {
  /** https://127.0.0.1:<port> */
  server: string;
  /** The apiserver's self-signed serving certificate chain, to verify TLS. */
  caFile: string;
  admin: Identity;
  /** The apiserver's and etcd's logs live here, for a failing test to show. */
  dir: string;
  kubectl(args: readonly string[], options?: KubectlOptions): Promise<KubectlResult>;
  /** One raw API call (JSON in and out) as an identity; never throws on an HTTP error status. */
  request(
    as: Identity,
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
  ): Promise<ApiResponse>;
  /** A token for a ServiceAccount from the TokenRequest API (no controller-manager needed) and its kubeconfig. */
  serviceAccount(namespace: string, name: string): Promise<Identity>;
  /** A @kubernetes/client-node KubeConfig for an identity (default admin). */
  kubeConfig(as?: Identity): KubeConfig;
}

let started: Promise<KubeCluster> | undefined;
let installed: Promise<KubeCluster> | undefined;

/** The namespace metacontroller/default installs into; the node daemon's rights and the CSPCs live there. */
export const INSTALL_NAMESPACE = "openebs";

/** The shared cluster, started on first call. */
export function kubeCluster(): Promise<KubeCluster> {
  started ??= startCluster();
  return started;
}

/** A cluster of a test's own, for what must not happen to the shared one (its apiserver restarted, other flags). */
export interface OwnCluster extends KubeCluster {
  /** Stops kube-apiserver (etcd keeps the data) and starts it again with the same flags and port; resolves once ready. */
  restartApiserver(): Promise<void>;
  /**
   * Kills etcd (SIGKILL, a crash) and starts it again on the same data directory and port; resolves once the
   * apiserver is ready again. What etcd acknowledged is in its write-ahead log and survives.
   */
  restartEtcd(): Promise<void>;
  /** Stops kube-apiserver and etcd and removes their data. */
  stop(): Promise<void>;
}

export interface OwnClusterOptions {
  /** Extra kube-apiserver flags, e.g. ["--min-request-timeout=5"]. */
  apiserverArgs?: string[];
  /** kube-controller-manager controllers to run against it (its --controllers), e.g. ["persistentvolume-binder"]. */
  controllers?: string[];
}

/** Starts a separate etcd and kube-apiserver (about 10 s); stopped by stop() or at the end of the run. */
export async function ownCluster(options: OwnClusterOptions = {}): Promise<OwnCluster> {
  return startCluster(options.apiserverArgs ?? [], options.controllers ?? []);
}

/** Installs this project as projectInstalled() does, into any cluster. */
export async function installProject(cluster: KubeCluster): Promise<void> {
  await cluster.kubectl([
    "apply",
    "--server-side",
    "-f",
    fixturePath("metacontroller/metacontroller-crds.yaml"),
  ]);
  await cluster.kubectl(["apply", "--server-side", "-k", repoPath("metacontroller/crds/ndm")]);
  await cluster.kubectl(["apply", "--server-side", "-k", repoPath("metacontroller/crds")]);
  await cluster.kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
  await cluster.kubectl(["apply", "--server-side", "-k", repoPath("metacontroller/default")]);
  // The CHAP key docs/install.md has the installer make (there with a random key; here the tests' fixed one).
  await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: CHAP_KEY_SECRET, namespace: INSTALL_NAMESPACE },
      type: "Opaque",
      data: { [CHAP_KEY_SECRET_KEY]: Buffer.from(TEST_CHAP_KEY).toString("base64") },
    }),
  });
}

/**
 * The shared cluster with this project installed as a user installs it (`kubectl apply -k metacontroller/default`),
 * plus what a real cluster would already have: Metacontroller's CRDs and NDM's (test/fixtures, metacontroller/crds/ndm).
 * The admission overlays are not applied here: a webhook nobody serves would slow every CSPC write.
 */
export function projectInstalled(): Promise<KubeCluster> {
  installed ??= (async () => {
    const cluster = await kubeCluster();
    await installProject(cluster);
    return cluster;
  })();
  return installed;
}

export function repoPath(path: string): string {
  return join(REPO_ROOT, path);
}

export function fixturePath(path: string): string {
  return join(REPO_ROOT, "test/fixtures", path);
}

interface KubeBinaries {
  KUBE_APISERVER: string;
  KUBE_CONTROLLER_MANAGER: string;
  ETCD: string;
  KUBECTL: string;
}

async function kubeBinaries(): Promise<KubeBinaries> {
  // Idempotent and quick once cached; on a fresh machine this is where the one-time build happens.
  const { stdout } = await execFileText(
    "bash",
    [join(REPO_ROOT, "scripts/kube-env.sh"), "--print-env"],
    20 * 60_000,
  );
  const env = Object.fromEntries(
    stdout
      .trim()
      .split("\n")
      .map((line) => line.split("=", 2) as [string, string]),
  );
  for (const key of ["KUBE_APISERVER", "KUBE_CONTROLLER_MANAGER", "ETCD", "KUBECTL"]) {
    if (!env[key]) throw new Error(`scripts/kube-env.sh --print-env did not name ${key}`);
  }
  return env as unknown as KubeBinaries;
}

async function startCluster(
  extraApiserverArgs: readonly string[] = [],
  controllers: readonly string[] = [],
): Promise<OwnCluster> {
  const bin = await kubeBinaries();
  // etcd fsyncs on every write; tmpfs keeps a test run's many small writes fast.
  const base = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
  const dir = mkdtempSync(join(base, "cstor-kube-"));
  const processes: ChildProcess[] = [];
  const stopProcesses = async (): Promise<void> => {
    for (const child of processes.reverse()) await stopProcess(child);
    rmSync(dir, { recursive: true, force: true });
  };
  let stopped = false;
  const stopOnce = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await stopProcesses();
  };
  onStop(stopOnce);
  // If mocha dies without running its hooks, do not leave an etcd behind.
  process.once("exit", () => processes.forEach((child) => child.exitCode === null && child.kill("SIGKILL")));

  const [etcdPort, etcdPeerPort, apiPort] = await freePorts(3);
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
  const etcdArgs = [
    "--name=test",
    `--data-dir=${join(dir, "etcd")}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=test=${peerUrl}`,
  ];
  let etcd = startProcess(bin.ETCD, etcdArgs, join(dir, "etcd.log"));
  processes.push(etcd);

  const adminToken = randomBytes(24).toString("hex");
  writeFileSync(join(dir, "tokens.csv"), `${adminToken},admin,admin-uid,"system:masters"\n`, { mode: 0o600 });
  const { privateKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  writeFileSync(join(dir, "sa.key"), privateKey, { mode: 0o600 });
  const certDir = join(dir, "certs");
  mkdirSync(certDir);

  const apiserverArgs = [
    `--etcd-servers=${etcdUrl}`,
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    `--secure-port=${apiPort}`,
    `--cert-dir=${certDir}`,
    `--token-auth-file=${join(dir, "tokens.csv")}`,
    "--authorization-mode=RBAC",
    "--service-account-issuer=https://kubernetes.default.svc",
    `--service-account-key-file=${join(dir, "sa.key")}`,
    `--service-account-signing-key-file=${join(dir, "sa.key")}`,
    "--service-cluster-ip-range=10.96.0.0/24",
    // The node daemon's DaemonSet must be privileged to run zpool; the default refuses it.
    "--allow-privileged=true",
    "--profiling=false",
    // Debian's etcd 3.4.23 predates the progress notifications the watch cache relies on (3.4.31+) to serve a
    // watch of a quiet resource type: it answers "Too large resource version". Watches go to etcd instead.
    "--watch-cache=false",
    "--event-ttl=10m",
    ...extraApiserverArgs,
  ];

  const server = `https://127.0.0.1:${apiPort}`;
  // The self-signed chain appears once the serving certificate is generated, before /readyz answers.
  const caFile = join(certDir, "apiserver.crt");
  const adminKubeconfig = join(dir, "admin.kubeconfig");
  const admin: Identity = { username: "admin", token: adminToken, kubeconfig: adminKubeconfig };
  let apiserver: ChildProcess | undefined;
  const launchApiserver = async (): Promise<void> => {
    const child = startProcess(bin.KUBE_APISERVER, apiserverArgs, join(dir, "kube-apiserver.log"));
    apiserver = child;
    processes.push(child);
    await waitUntil(
      async () => {
        if (child.exitCode !== null)
          throw new Error(`kube-apiserver exited: ${logTail(join(dir, "kube-apiserver.log"))}`);
        if (!existsSync(caFile)) return false;
        const ready = await apiRequest(server, caFile, admin, "GET", "/readyz").catch(() => undefined);
        return ready?.status === 200;
      },
      90_000,
      () => `kube-apiserver did not become ready: ${logTail(join(dir, "kube-apiserver.log"))}`,
    );
  };
  const cluster: OwnCluster = {
    server,
    caFile,
    admin,
    dir,
    kubectl: (args, options) => runKubectl(bin.KUBECTL, args, options ?? {}, admin),
    request: (as, method, path, body, contentType) =>
      apiRequest(server, caFile, as, method, path, body, contentType),
    serviceAccount: (namespace, name) => serviceAccountIdentity(cluster, namespace, name),
    kubeConfig: (as) => clientKubeConfig(server, caFile, as ?? admin),
    restartApiserver: async () => {
      if (apiserver) await stopProcess(apiserver);
      // A start can exit on a loaded machine (etcd too slow for its first reads): start it again, as a kubelet
      // restarts a static pod. One still starting when the wait runs out is left to come up.
      for (let attempt = 1; ; attempt++) {
        try {
          await launchApiserver();
          return;
        } catch (error) {
          if (attempt >= 5 || apiserver?.exitCode === null) throw error;
        }
      }
    },
    restartEtcd: async () => {
      const exited = new Promise<void>((resolve) =>
        etcd.exitCode !== null || etcd.signalCode !== null ? resolve() : etcd.once("exit", () => resolve()),
      );
      etcd.kill("SIGKILL");
      await exited;
      etcd = startProcess(bin.ETCD, etcdArgs, join(dir, "etcd.log"));
      processes.push(etcd);
      await waitUntil(
        async () => {
          if (etcd.exitCode !== null)
            throw new Error(`etcd exited after a restart: ${logTail(join(dir, "etcd.log"))}`);
          return (
            (await apiRequest(server, caFile, admin, "GET", "/readyz").catch(() => undefined))?.status === 200
          );
        },
        90_000,
        () => `kube-apiserver not ready after etcd's restart: ${logTail(join(dir, "kube-apiserver.log"))}`,
      );
    },
    stop: stopOnce,
  };

  await launchApiserver();
  writeKubeconfig(adminKubeconfig, server, caFile, "admin", adminToken);
  // The bootstrap controller creates "default" a moment after /readyz; tests and kubectl expect it.
  await waitUntil(
    async () => (await cluster.request(admin, "GET", "/api/v1/namespaces/default")).status === 200,
    30_000,
    () => "namespace default never appeared",
  );
  if (controllers.length > 0) {
    // Only the named controllers, as the admin, serving nothing: the test's part of a control plane.
    const log = join(dir, "kube-controller-manager.log");
    const child = startProcess(
      bin.KUBE_CONTROLLER_MANAGER,
      [
        `--kubeconfig=${adminKubeconfig}`,
        `--controllers=${controllers.join(",")}`,
        "--leader-elect=false",
        "--secure-port=0",
      ],
      log,
    );
    processes.push(child);
    // It has no readiness endpoint without serving; a start that fails exits at once.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (child.exitCode !== null) throw new Error(`kube-controller-manager exited: ${logTail(log)}`);
  }
  return cluster;
}

function startProcess(file: string, args: string[], logFile: string): ChildProcess {
  const log = openSync(logFile, "a");
  const child = spawn(file, args, { stdio: ["ignore", log, log] });
  closeSync(log);
  child.on("error", () => undefined);
  return child;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const killTimer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(killTimer);
}

function logTail(path: string, lines = 15): string {
  try {
    return readFileSync(path, "utf8").trim().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, () => {
      const server = createServer();
      return new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => resolve(server));
      });
    }),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

/** Polls until check() is true; check() may throw to give up at once. */
/** The object at `path` as the admin reads it, or undefined when the API server does not answer it with 200. */
export async function getIfPresent(cluster: KubeCluster, path: string): Promise<any> {
  const response = await cluster.request(cluster.admin, "GET", path);
  return response.status === 200 ? response.body : undefined;
}

export async function waitUntil(
  check: () => Promise<boolean>,
  timeoutMs: number,
  describe: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(describe());
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function execFileText(
  file: string,
  args: readonly string[],
  timeoutMs: number,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${file} ${args.join(" ")} failed: ${stderr || error.message}`));
        else resolve({ stdout, stderr });
      },
    );
  });
}

function runKubectl(
  kubectl: string,
  args: readonly string[],
  options: KubectlOptions,
  admin: Identity,
): Promise<KubectlResult> {
  const fullArgs = [`--kubeconfig=${(options.as ?? admin).kubeconfig}`, ...args];
  return new Promise((resolve, reject) => {
    const child = execFile(
      kubectl,
      fullArgs,
      { timeout: options.timeoutMs ?? 60_000, maxBuffer: 32 * 1024 * 1024, encoding: "utf8" },
      (error, stdout, stderr) => {
        const exitCode = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        const result = { stdout, stderr, exitCode };
        if (exitCode !== 0 && !options.allowFailure) reject(new KubectlError(args, result));
        else resolve(result);
      },
    );
    child.stdin?.end(options.input ?? "");
  });
}

function apiRequest(
  server: string,
  caFile: string,
  as: Identity,
  method: string,
  path: string,
  body?: unknown,
  contentType = "application/json",
): Promise<ApiResponse> {
  const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      new URL(path, server),
      {
        method,
        ca: readFileSync(caFile),
        headers: {
          Authorization: `Bearer ${as.token}`,
          Accept: "application/json",
          ...(payload === undefined
            ? {}
            : { "Content-Type": contentType, "Content-Length": Buffer.byteLength(payload) }),
        },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed: unknown = text;
          // A watch answers one JSON event per line: its body is the list of events.
          if ((res.headers["content-type"] ?? "").includes("json") && text)
            parsed = text.trimEnd().includes("\n")
              ? text
                  .trimEnd()
                  .split("\n")
                  .map((line) => JSON.parse(line) as unknown)
              : JSON.parse(text);
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on("error", reject);
    req.end(payload);
  });
}

function writeKubeconfig(path: string, server: string, caFile: string, user: string, token: string): void {
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "test", cluster: { server, "certificate-authority": caFile } }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: user, context: { cluster: "test", user } }],
    "current-context": user,
  };
  writeFileSync(path, stringify(config), { mode: 0o600 });
}

async function serviceAccountIdentity(
  cluster: KubeCluster,
  namespace: string,
  name: string,
): Promise<Identity> {
  const response = await cluster.request(
    cluster.admin,
    "POST",
    `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
    { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
  );
  if (response.status !== 201 || !response.body?.status?.token) {
    throw new Error(
      `TokenRequest for ${namespace}/${name} answered ${response.status}: ${JSON.stringify(response.body)}`,
    );
  }
  const username = `system:serviceaccount:${namespace}:${name}`;
  const kubeconfig = join(cluster.dir, `sa-${namespace}-${name}.kubeconfig`);
  writeKubeconfig(kubeconfig, cluster.server, cluster.caFile, username, response.body.status.token);
  return { username, token: response.body.status.token, kubeconfig };
}

function clientKubeConfig(server: string, caFile: string, as: Identity): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "test", server, caFile, skipTLSVerify: false }],
    users: [{ name: as.username, token: as.token }],
    contexts: [{ name: as.username, cluster: "test", user: as.username }],
    currentContext: as.username,
  });
  return kc;
}

/** Plays the kubelet and the Deployment controller: the Deployment's one replica is available now. */
export async function markDeploymentAvailable(
  cluster: KubeCluster,
  deployment: { metadata: { name?: string; namespace?: string; generation?: number } } | Record<string, any>,
): Promise<void> {
  const now = new Date().toISOString();
  const { namespace, name, generation } = deployment.metadata as {
    name?: string;
    namespace?: string;
    generation?: number;
  };
  const available = await cluster.request(
    cluster.admin,
    "PATCH",
    `/apis/apps/v1/namespaces/${namespace}/deployments/${name}/status`,
    {
      status: {
        observedGeneration: generation,
        replicas: 1,
        readyReplicas: 1,
        availableReplicas: 1,
        updatedReplicas: 1,
        conditions: [
          {
            type: "Available",
            status: "True",
            reason: "MinimumReplicasAvailable",
            message: "played by the test",
            lastUpdateTime: now,
            lastTransitionTime: now,
          },
        ],
      },
    },
    "application/merge-patch+json",
  );
  if (available.status !== 200)
    throw new Error(
      `marking Deployment ${namespace}/${name} available: ${available.status} ${JSON.stringify(available.body)}`,
    );
}

/**
 * NDM and the kubelet played for a CSPC in rounds `everyMs` apart until stopped, each round followed by the
 * caller's own part (`alsoEachRound`, e.g. a volume target's). A round that fails (the apiserver busy or
 * restarting) is simply the next round's to do, as NDM's own loop would.
 */
export function keepPlayingNdmAndKubelet(
  cluster: KubeCluster,
  namespace: string,
  cspc: string,
  everyMs: number,
  alsoEachRound: () => Promise<void> = async () => undefined,
): { stop(): Promise<void> } {
  let playing = true;
  const rounds = (async () => {
    while (playing) {
      try {
        await playNdmAndKubelet(cluster, namespace, cspc);
        await alsoEachRound();
      } catch {
        // Next round.
      }
      if (playing) await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    async stop() {
      playing = false;
      await rounds;
    },
  };
}

/**
 * One round of what NDM and the kubelet do for a CSPC's pools on a cluster without them: every claim of the
 * CSPC not being deleted is Bound, every pool Deployment is available at its generation.
 */
export async function playNdmAndKubelet(
  cluster: KubeCluster,
  namespace: string,
  cspc: string,
): Promise<void> {
  const base = `/apis/${API_VERSION}/namespaces/${namespace}/blockdeviceclaims`;
  const claims =
    (
      await cluster.request(
        cluster.admin,
        "GET",
        `${base}?labelSelector=${encodeURIComponent(`${LABEL.cspc}=${cspc}`)}`,
      )
    ).body.items ?? [];
  for (const claim of claims) {
    if (claim.status?.phase !== "Bound" && !claim.metadata.deletionTimestamp) {
      await cluster.request(
        cluster.admin,
        "PATCH",
        `${base}/${claim.metadata.name}`,
        { status: { phase: "Bound" } },
        "application/merge-patch+json",
      );
    }
  }
  const deployments =
    (
      await cluster.request(
        cluster.admin,
        "GET",
        `/apis/apps/v1/namespaces/${namespace}/deployments?labelSelector=${encodeURIComponent(LABEL.cspi)}`,
      )
    ).body.items ?? [];
  for (const d of deployments) {
    if (d.status?.observedGeneration !== d.metadata.generation || d.status?.availableReplicas !== 1)
      await markDeploymentAvailable(cluster, d);
  }
}
