// The node daemon's view of its CSPIs cannot go stale, against a real kube-apiserver of this suite's own
// (testkit/kube.ts ownCluster) that ends every watch after a few seconds (--min-request-timeout=4: watches
// last 4 to 8 s, where the default is 30 to 60 minutes) and is restarted under the running daemons. Two daemon
// processes, each on a simulated node with its own zfs-fuse (testkit/zfs-node.ts). Their resync period is
// an hour, so only the watch, and the lists after it ends, can bring a change to them within the test.
import { expect } from "chai";
import { API_VERSION, KIND, LABEL } from "../../api/constants.js";
import type { CSPI } from "../../api/types.js";
import { resolvePoolConfig } from "../../lib/cspc/build.js";
import { zpoolName } from "../../lib/names.js";
import {
  getIfPresent,
  installProject,
  INSTALL_NAMESPACE,
  ownCluster,
  waitUntil,
  type Identity,
  type OwnCluster,
} from "../../testkit/kube.js";
import { DaemonProcess, shippedDaemonEnv } from "../../testkit/node-daemon-process.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";
import { blockDeviceName, MiB, requireZfs, ZfsSandbox } from "../../testkit/zfs.js";

const NS = INSTALL_NAMESPACE;
const DEVICE_MIB = 64;
const WAIT_MS = 60_000;
/** The apiserver ends each watch after 4 to 8 s. */
const MIN_REQUEST_TIMEOUT_S = 4;

describe("integration: the node daemon's view of its CSPIs stays current (watch ends, apiserver restart)", function () {
  this.timeout(5 * 60_000);
  let cluster: OwnCluster;
  let identity: Identity;
  let sandbox: ZfsSandbox;
  let hostA: ZfsNode;
  let hostB: ZfsNode;
  let daemonA: DaemonProcess;
  let daemonB: DaemonProcess;
  let name: string;
  let pool: string;
  let data: { file: string; sha: string };
  const cspiPath = (cspi = "") =>
    `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances${cspi ? `/${cspi}` : ""}`;
  const tails = () => [daemonA, daemonB].map((d) => d?.tail() ?? "").join("");

  const getCspi = (): Promise<CSPI | undefined> => getIfPresent(cluster, cspiPath(name));
  const waitForCspi = async (what: string, done: (cspi: CSPI | undefined) => boolean): Promise<void> => {
    let last: CSPI | undefined;
    await waitUntil(
      async () => done((last = await getCspi().catch(() => undefined))),
      WAIT_MS,
      () => `CSPI ${name}: ${what} did not happen; last status: ${JSON.stringify(last?.status)}${tails()}`,
    );
  };
  const moveTo = async (host: string) => {
    const response = await cluster.request(
      cluster.admin,
      "PATCH",
      cspiPath(name),
      [
        { op: "replace", path: "/spec/hostName", value: host },
        { op: "replace", path: "/spec/nodeSelector", value: { [LABEL.hostname]: host } },
        // cspc-sync moves the hostname label with the pool: the daemons watch by it.
        { op: "replace", path: "/metadata/labels/kubernetes.io~1hostname", value: host },
      ],
      "application/json-patch+json",
    );
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
  };
  /** Lists after a watch ended or failed, from the daemon's log (watch-cache.ts). */
  const relists = (daemon: DaemonProcess, reason: string) =>
    daemon.lines.filter((l) => /^CSPI watch (ended|failed)/.test(l.msg) && l.reason === reason);

  before(async () => {
    requireZfs();
    cluster = await ownCluster({ apiserverArgs: [`--min-request-timeout=${MIN_REQUEST_TIMEOUT_S}`] });
    await installProject(cluster);
    identity = await cluster.serviceAccount(NS, "cstor-pool-node");
    const shippedEnv = await shippedDaemonEnv(cluster, NS);
    sandbox = new ZfsSandbox();
    hostA = await startNode(`watch-a-${sandbox.id}`);
    hostB = await startNode(`watch-b-${sandbox.id}`);
    const start = (nodeName: string, host: ZfsNode) =>
      DaemonProcess.start({
        env: shippedEnv(nodeName),
        kubeconfig: identity.kubeconfig,
        // An hour between resyncs: nothing but the watch and its relists reaches the daemon during the test.
        overrides: { ZFS_COMMAND_PREFIX: host.commandPrefixEnv, STATUS_INTERVAL_SECONDS: "3600" },
      });
    daemonA = await start(`watch-a-${sandbox.id}`, hostA);
    daemonB = await start(`watch-b-${sandbox.id}`, hostB);
    name = `watch-${sandbox.id}`;
    pool = zpoolName(name);
  });

  after(async () => {
    for (const daemon of [daemonA, daemonB]) await daemon?.stop();
    await Promise.all([hostA?.stop(), hostB?.stop()]);
    sandbox?.cleanup();
    await cluster?.stop();
  });

  it("a new CSPI for node A: A's daemon creates the pool", async () => {
    const devices = [sandbox.file("w1", DEVICE_MIB), sandbox.file("w2", DEVICE_MIB)];
    const cspi: CSPI = {
      apiVersion: API_VERSION,
      kind: KIND.cspi,
      metadata: { name, namespace: NS, labels: { [LABEL.hostname]: daemonA.nodeName } },
      spec: {
        hostName: daemonA.nodeName,
        nodeSelector: { [LABEL.hostname]: daemonA.nodeName },
        poolConfig: resolvePoolConfig(undefined),
        raidGroups: [
          {
            type: "mirror",
            blockDevices: devices.map((devLink) => ({
              blockDeviceName: blockDeviceName(devLink),
              capacity: DEVICE_MIB * MiB,
              devLink,
            })),
          },
        ],
      },
    };
    const created = await cluster.request(cluster.admin, "POST", cspiPath(), cspi);
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    await waitForCspi(
      "ONLINE on node A",
      (c) => c?.status?.phase === "ONLINE" && c.status.importedOn === daemonA.nodeName,
    );
    data = hostA.writeData(sandbox, `${pool}/vol`, 1);
  });

  it("moved to node B, whose daemon has idled past several watch timeouts: A exports, B imports at once", async () => {
    // Both daemons' watches have been ended by the apiserver twice since: each listed again and watches on.
    await waitUntil(
      async () => relists(daemonA, "watch-ended").length >= 2 && relists(daemonB, "watch-ended").length >= 2,
      WAIT_MS,
      () => `the apiserver did not end the daemons' watches${tails()}`,
    );
    await moveTo(daemonB.nodeName);
    await waitForCspi(
      "ONLINE on node B",
      (c) => c?.status?.phase === "ONLINE" && c.status.importedOn === daemonB.nodeName,
    );
    expect(hostA.imported(pool)).to.equal(false);
    expect(hostB.checksum(data.file)).to.equal(data.sha);

    const metrics = await (await fetch(`http://127.0.0.1:${daemonB.metricsPort}/metrics`)).text();
    expect(metrics).to.match(/cstor_node_daemon_cspi_lists_total\{reason="watch-ended"\} [1-9]/);
    const age = Number(/^cstor_node_daemon_cspi_view_age_seconds (\S+)$/m.exec(metrics)?.[1]);
    expect(age, "the view was confirmed within the last watch period").to.be.within(
      0,
      2 * MIN_REQUEST_TIMEOUT_S + 5,
    );
    // Node A's daemon, which was sent its pool's changes (B was sent nothing of A's until the move).
    const ended = relists(daemonA, "watch-ended").at(-1)!;
    expect(ended.lastEventAgeSeconds, "the log line says how old the last event was").to.be.a("number");
  });

  it("the apiserver restarted under both daemons: they list and watch again, and the CSPI moved back to A follows", async () => {
    const failedBefore = [daemonA, daemonB].map(
      (d) => relists(d, "watch-failed").length + relists(d, "watch-ended").length,
    );
    await cluster.restartApiserver();
    await waitUntil(
      async () =>
        [daemonA, daemonB].every(
          (d, i) => relists(d, "watch-failed").length + relists(d, "watch-ended").length > failedBefore[i],
        ),
      WAIT_MS,
      () => `the daemons did not notice the restart${tails()}`,
    );
    await moveTo(daemonA.nodeName);
    await waitForCspi(
      "ONLINE on node A again",
      (c) => c?.status?.phase === "ONLINE" && c.status.importedOn === daemonA.nodeName,
    );
    expect(hostB.imported(pool)).to.equal(false);
    expect(hostA.checksum(data.file)).to.equal(data.sha);
  });

  it("stopped on SIGTERM with exit code 0, with no error logged", async () => {
    for (const daemon of [daemonA, daemonB]) {
      expect(await daemon.stop(), daemon.tail()).to.deep.equal({ code: 0, signal: null });
      expect(
        daemon.lines.filter((l) => l.level === "error"),
        daemon.nodeName,
      ).to.deep.equal([]);
    }
  });
});
