// The node daemon under faults, on real zfs-fuse pools holding real data: zpool failing, hanging past its
// timeout, printing garbage or half its output; the daemon killed in the middle of a create, an expansion
// and a replacement and started again; the API server gone and back while the pool fills past its
// read-only threshold; a device's path disappearing. Before each fault a file is written into a dataset; after
// it the file's sha256 must be unchanged, the pool must have converged to its spec, and the status must have
// told the truth in between. zpool is the real one behind a wrapper script (support/faulty-zpool.ts).
import { renameSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "chai";
import { parse, stringify } from "yaml";
import { ANNOTATION, API_VERSION, KIND, LABEL } from "../../api/constants.js";
import type { CSPI, CSPIStatus } from "../../api/types.js";
import { resolvePoolConfig } from "../../lib/cspc/build.js";
import { findCondition } from "../../lib/conditions.js";
import { createLogger } from "../../runtime/log.js";
import { claimName, zpoolName } from "../../lib/names.js";
import { createRunner, type Runner } from "../../process/runner.js";
import { inspectDevice, ZfsHost } from "../../zfs/host.js";
import { leaves, parseZpoolStatus } from "../../zfs/parse.js";
import { reconcilePass, type PassResult } from "../../node-daemon/reconcile.js";
import { INSTALL_NAMESPACE, projectInstalled, waitUntil, type KubeCluster } from "../../testkit/kube.js";
import { DaemonProcess, shippedDaemonEnv } from "../../testkit/node-daemon-process.js";
import {
  blockDeviceName,
  checksum,
  cspiFor,
  requireZfs,
  SANDBOX_DEVICE_ROOTS,
  writeData,
  zfs,
  zpool,
  ZfsSandbox,
} from "../../testkit/zfs.js";
import { FaultyCommand, type Fault } from "./support/faulty-zpool.js";
import { TcpProxy } from "./support/tcp-proxy.js";
import { tally } from "./support/tally.js";

const ZPOOL = "/usr/sbin/zpool";
/** zpool subcommands that change a pool: none may run because of a fault, and none may ever run with -f. */
const CHANGING =
  /^(create|add|replace|remove|destroy|export|import|labelclear|online|offline|detach|attach)\b/;
const DEVICE_MIB = 64;

/** The pool's data groups as zpool shows them (device paths), in order. */
function dataGroups(pool: string): string[][] {
  const [status] = parseZpoolStatus(zpool("status", pool));
  return status.layout.data.map((vdev) => leaves([vdev]).map((leaf) => leaf.device ?? leaf.name));
}

/** A file of data in the pool, and a check that it is still there, byte for byte. */
class Data {
  private readonly files: { file: string; sha: string }[] = [];
  constructor(private readonly sandbox: ZfsSandbox) {}
  write(dataset: string, sizeMiB = 2): void {
    this.files.push(writeData(this.sandbox, dataset, sizeMiB));
  }
  expectIntact(fault: string): void {
    const lost = this.files.filter((f) => checksum(f.file) !== f.sha).length;
    tally.data(this.files.length, lost);
    expect(lost, `${fault}: files whose sha256 changed`).to.equal(0);
  }
}

describe("node daemon under zpool faults (reconcile passes on real zfs-fuse pools)", function () {
  this.timeout(120_000);
  let sandbox: ZfsSandbox;
  let faulty: FaultyCommand;
  let host: ZfsHost;

  before(() => {
    requireZfs();
    sandbox = new ZfsSandbox();
    faulty = new FaultyCommand(sandbox.dir, ZPOOL);
    // The production command layer (execFile, SIGTERM then SIGKILL, typed errors) with its timeouts scaled
    // down from minutes to a second, so a hang past the timeout costs a second here.
    const real = createRunner();
    const runner: Runner = {
      run: (argv, options = {}) =>
        real.run(argv, {
          ...options,
          timeoutMs: Math.min(options.timeoutMs ?? 60_000, 1_000),
          killGraceMs: 200,
        }),
      idle: () => real.idle(),
    };
    host = new ZfsHost(runner, { zpool: [faulty.path], zfs: ["zfs"], truncate: ["truncate"] });
  });
  after(() => sandbox?.cleanup());

  async function pass(cspi: CSPI): Promise<PassResult & { cspi: CSPI }> {
    const result = await reconcilePass(cspi, {
      host,
      inspect: inspectDevice,
      nodeName: "node-f",
      hostName: "node-f",
      deviceRoots: SANDBOX_DEVICE_ROOTS,
      clock: () => new Date(),
      logger: createLogger({ level: "silent" }),
    });
    return { ...result, cspi: result.status ? { ...cspi, status: result.status } : cspi };
  }

  /** Runs one pass with the fault set; returns what it did and the commands it ran while faulty. */
  async function withFault(
    cspi: CSPI,
    subcommand: string,
    fault: Fault,
  ): Promise<{ result: PassResult & { cspi: CSPI }; ran: string[] }> {
    const before = faulty.invocations().length;
    faulty.set(subcommand, fault);
    try {
      const result = await pass(cspi);
      return { result, ran: faulty.invocations().slice(before) };
    } finally {
      faulty.clear();
    }
  }

  function expectNoChangeRan(ran: string[], fault: string): void {
    expect(
      ran.filter(
        (argv) => CHANGING.test(argv) && !argv.startsWith("import -d") && !argv.startsWith("import -c"),
      ),
      `${fault}: pool-changing commands`,
    ).to.deep.equal([]);
  }

  it("zpool create fails: no pool, status Pending, nothing forced; the next pass creates it", async () => {
    const cspi = cspiFor(sandbox.name("create-fails"), "node-f", [
      { type: "mirror", devices: [sandbox.file("c1", DEVICE_MIB), sandbox.file("c2", DEVICE_MIB)] },
    ]);
    const { result } = await withFault(cspi, "create", "fail");
    expect(result.outcomes.map((o) => o.action.kind)).to.deep.equal(["create"]);
    expect(result.outcomes[0].error).to.match(
      /zpool create .* mirror \S+\/c1 \S+\/c2 exited with 1: cannot create: I\/O error \(injected fault\)$/,
    );
    expect(result.status?.phase).to.equal("Pending");
    expect(zpool("list", "-H", "-o", "name")).to.not.contain(zpoolName(cspi.metadata.name!));
    const again = await pass(result.cspi);
    expect(again.status?.phase).to.equal("ONLINE");
    expect(faulty.invocations().filter((argv) => / -f\b/.test(argv))).to.deep.equal([]);
    tally.fault("zpool create fails", true);
  });

  describe("on a live pool holding data", () => {
    let cspi: CSPI;
    let pool: string;
    let data: Data;

    before(async () => {
      const name = sandbox.name("live");
      pool = zpoolName(name);
      cspi = (
        await pass(
          cspiFor(name, "node-f", [
            { type: "mirror", devices: [sandbox.file("l1", DEVICE_MIB), sandbox.file("l2", DEVICE_MIB)] },
          ]),
        )
      ).cspi;
      expect(cspi.status?.phase).to.equal("ONLINE");
      data = new Data(sandbox);
      data.write(`${pool}/vol1`);
    });

    /** After a fault: a clean pass converges to ONLINE with the spec's layout and the data intact. */
    async function expectConverged(fault: string): Promise<void> {
      const healed = await pass(cspi);
      expect(healed.observationError, fault).to.equal(undefined);
      expect(healed.status?.phase, fault).to.equal("ONLINE");
      expect(dataGroups(pool), fault).to.deep.equal(
        cspi.spec.raidGroups.map((g) => g.blockDevices.map((d) => d.devLink)),
      );
      cspi = healed.cspi;
      data.expectIntact(fault);
      tally.fault(fault, true);
    }

    for (const [subcommand, fault, says] of [
      ["status", "fail", /zpool status exited with 1: cannot status: I\/O error \(injected fault\)$/],
      ["status", "hang", /zpool status timed out and was stopped$/],
      ["list", "hang", /zpool list cstor-live-\w+ timed out and was stopped$/],
      ["get", "fail", /zpool get cachefile cstor-live-\w+ exited with 1/],
    ] as const) {
      it(`zpool ${subcommand} ${fault === "fail" ? "fails" : "hangs past its timeout"}: phase Error with the command's own words, nothing changed, no process left; then ONLINE`, async () => {
        const { result, ran } = await withFault(cspi, subcommand, fault);
        expect(result.observationError).to.match(says);
        expect(result.status?.phase).to.equal("Error");
        expect(result.outcomes).to.deep.equal([]);
        expectNoChangeRan(ran, `${subcommand} ${fault}`);
        expect(faulty.hanging(), "the timed-out zpool was stopped, not left running").to.deep.equal([]);
        await expectConverged(`zpool ${subcommand} ${fault}`);
      });
    }

    for (const [fault, says] of [
      [
        "garbage",
        /^unreadable zpool status output: expected a pool \(" {2}pool: <name>"\) or "no pools available" \(line 1: "\?\? status/,
      ],
      [
        "truncated",
        /^unreadable zpool status output: pool \S+ ends before its vdev tree \(no config: section\)/,
      ],
    ] as const) {
      it(`zpool status prints ${fault === "garbage" ? "garbage" : "half its output"}: phase Error saying the output could not be read, no zpool add or other change tried; then ONLINE`, async () => {
        const { result, ran } = await withFault(cspi, "status", fault);
        // Read as "no pools" this was phase UNAVAIL with PoolLost; read as a pool without devices, a zpool add of its own devices.
        expect(result.observationError).to.match(says);
        expect(result.status?.phase).to.equal("Error");
        expect(findCondition(result.status?.conditions, "PoolLost"), "no pool claimed lost").to.equal(
          undefined,
        );
        expect(result.outcomes).to.deep.equal([]);
        expect(
          ran.filter((argv) => argv.startsWith("add ")),
          "zpool add tried",
        ).to.deep.equal([]);
        expectNoChangeRan(ran, `status ${fault}`);
        await expectConverged(`zpool status ${fault}`);
      });
    }

    for (const subcommand of ["list", "get"] as const) {
      const fault = "garbage";
      it(`zpool ${subcommand} prints garbage: nothing forced or destroyed, data intact; then ONLINE`, async () => {
        const { result, ran } = await withFault(cspi, subcommand, fault);
        // An unreadable size or cachefile property reads as unknown, and nothing is planned on an unknown.
        expect(
          ran.filter(
            (argv) =>
              / -f\b/.test(argv) || /^(destroy|labelclear|export|replace|remove|detach|create)\b/.test(argv),
          ),
          "forced or destructive commands",
        ).to.deep.equal([]);
        expect(
          result.outcomes.filter((o) => !o.error).map((o) => o.action.kind),
          "actions that succeeded on a misread",
        ).to.deep.equal([]);
        expect(dataGroups(pool)).to.deep.equal(
          cspi.spec.raidGroups.map((g) => g.blockDevices.map((d) => d.devLink)),
        );
        await expectConverged(`zpool ${subcommand} ${fault}`);
      });
    }

    it("zpool add hangs during an expansion: the command is stopped, PoolExpansion says it failed and why; the next pass expands", async () => {
      const grown: CSPI = {
        ...cspi,
        spec: {
          ...cspi.spec,
          raidGroups: [
            ...cspi.spec.raidGroups,
            ...cspiFor("x", "node-f", [
              { type: "mirror", devices: [sandbox.file("l3", DEVICE_MIB), sandbox.file("l4", DEVICE_MIB)] },
            ]).spec.raidGroups,
          ],
        },
      };
      const { result } = await withFault(grown, "add", "hang");
      expect(result.outcomes.map((o) => o.action.kind)).to.deep.equal(["add"]);
      expect(result.outcomes[0].error).to.match(
        /zpool add cstor-live-\w+ mirror \S+l3 \S+l4 timed out and was stopped$/,
      );
      const expansion = findCondition(result.status?.conditions, "PoolExpansion");
      expect(expansion?.status).to.equal("True");
      expect(expansion?.message).to.contain("timed out");
      expect(dataGroups(pool)).to.have.length(1);
      expect(faulty.hanging()).to.deep.equal([]);
      cspi = grown;
      await expectConverged("zpool add hangs");
      expect(dataGroups(pool)).to.have.length(2);
    });

    it("a device's path disappears: DiskUnavailable names it while it is gone, clears when it is back; data intact", async () => {
      const devLink = cspi.spec.raidGroups[1].blockDevices[0].devLink!;
      renameSync(devLink, `${devLink}.away`);
      try {
        const gone = await pass(cspi);
        const unavailable = findCondition(gone.status?.conditions, "DiskUnavailable");
        expect(unavailable).to.include({ status: "True" });
        expect(unavailable!.message).to.contain(blockDeviceName(devLink)).and.contain(devLink);
        expect(gone.outcomes).to.deep.equal([]);
        cspi = gone.cspi;
        data.expectIntact("device path gone");
      } finally {
        renameSync(`${devLink}.away`, devLink);
      }
      const back = await pass(cspi);
      expect(findCondition(back.status?.conditions, "DiskUnavailable")?.status).to.equal("False");
      cspi = back.cspi;
      await expectConverged("device path disappears and comes back");
    });
  });
});

const NS = INSTALL_NAMESPACE;
const cspiPath = (name = "") =>
  `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances${name ? `/${name}` : ""}`;

describe("node daemon process killed mid-action, and the API server gone and back (real apiserver, real zfs-fuse)", function () {
  this.timeout(5 * 60_000);
  let cluster: KubeCluster;
  let sandbox: ZfsSandbox;
  let faulty: FaultyCommand;
  let proxy: TcpProxy;
  let kubeconfig: string;
  let shippedEnv: Record<string, string>;
  let daemon: DaemonProcess | undefined;
  const daemons: DaemonProcess[] = [];
  let name: string;
  let pool: string;
  let data: Data;
  const devices: Record<string, string> = {};
  const node = () => `flt-${sandbox.id}`;

  const getCspi = async (): Promise<CSPI> =>
    (await cluster.request(cluster.admin, "GET", cspiPath(name))).body as CSPI;
  const tails = () => daemons.map((d) => d.tail()).join("");
  const waitForStatus = async (
    what: string,
    done: (status: CSPIStatus) => boolean,
    timeoutMs = 60_000,
  ): Promise<CSPI> => {
    let last: CSPI | undefined;
    await waitUntil(
      async () => done((last = await getCspi()).status ?? {}),
      timeoutMs,
      () => `${what} did not happen; status: ${JSON.stringify(last?.status)}${tails()}`,
    );
    return last!;
  };
  const apply = async (...objects: object[]) => {
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
  };
  const patchCspi = async (patch: unknown[]) => {
    const response = await cluster.request(
      cluster.admin,
      "PATCH",
      cspiPath(name),
      patch,
      "application/json-patch+json",
    );
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
  };
  const group = (type: "mirror" | "stripe", ...keys: string[]) => ({
    type,
    blockDevices: keys.map((k) => ({
      blockDeviceName: blockDeviceName(devices[k]),
      capacity: DEVICE_MIB * 1024 * 1024,
      devLink: devices[k],
    })),
  });
  const claim = (key: string, annotations?: Record<string, string>) => ({
    apiVersion: API_VERSION,
    kind: KIND.blockDeviceClaim,
    metadata: {
      name: claimName(blockDeviceName(devices[key])),
      namespace: NS,
      labels: { [LABEL.cspc]: "flt", [LABEL.cspi]: name },
      ...(annotations ? { annotations } : {}),
    },
    spec: { blockDeviceName: blockDeviceName(devices[key]) },
    status: { phase: "Bound" },
  });
  const start = async (): Promise<DaemonProcess> => {
    daemon = await DaemonProcess.start({
      env: shippedEnv,
      kubeconfig,
      overrides: { ZFS_COMMAND_PREFIX: "[]", ZPOOL_BIN: faulty.path, STATUS_INTERVAL_SECONDS: "2" },
    });
    daemons.push(daemon);
    return daemon;
  };
  /** The pod is killed: the daemon gets SIGTERM and no grace (SIGKILL 200 ms later), and the zpool it ran dies with the container. */
  const kill = async (): Promise<void> => {
    const ended = await daemon!.stop(200);
    expect(ended.signal, "the daemon was still inside the command when it was killed").to.equal("SIGKILL");
    for (const pid of faulty.hanging()) process.kill(pid, "SIGKILL");
    daemon = undefined;
  };
  const count = (subcommand: string) =>
    faulty.invocations().filter((argv) => argv.startsWith(`${subcommand} `)).length;

  before(async () => {
    requireZfs();
    cluster = await projectInstalled();
    sandbox = new ZfsSandbox();
    faulty = new FaultyCommand(sandbox.dir, ZPOOL);
    name = `flt-life-${sandbox.id}`;
    pool = zpoolName(name);
    data = new Data(sandbox);
    for (const key of ["d1", "d2", "d3", "d4", "d5"]) devices[key] = sandbox.file(`flt-${key}`, DEVICE_MIB);
    // The daemon reaches the API server through a proxy the test can take away.
    const identity = await cluster.serviceAccount(NS, "cstor-pool-node");
    proxy = await TcpProxy.start(Number(new URL(cluster.server).port));
    const config = parse(await readFile(identity.kubeconfig, "utf8")) as {
      clusters: { cluster: { server: string } }[];
    };
    config.clusters[0].cluster.server = `https://127.0.0.1:${proxy.port}`;
    kubeconfig = join(sandbox.dir, "node-daemon.kubeconfig");
    await writeFile(kubeconfig, stringify(config), { mode: 0o600 });
    shippedEnv = (await shippedDaemonEnv(cluster, NS))(node());
  });

  after(async () => {
    await proxy?.up().catch(() => undefined);
    for (const d of daemons) await d.stop(5_000);
    for (const pid of faulty?.hanging() ?? []) process.kill(pid, "SIGKILL");
    await cluster?.request(
      cluster.admin,
      "PATCH",
      cspiPath(name),
      { metadata: { finalizers: null } },
      "application/merge-patch+json",
    );
    await cluster?.request(cluster.admin, "DELETE", cspiPath(name));
    for (const key of Object.keys(devices)) {
      await cluster?.request(
        cluster.admin,
        "DELETE",
        `/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims/${claimName(blockDeviceName(devices[key]))}`,
      );
    }
    sandbox?.cleanup();
  });

  it("killed in the middle of zpool create: the restarted daemon finds the pool made and keeps it (no second create), data intact", async () => {
    await start();
    faulty.set("create", "done-then-hang");
    await apply(
      {
        apiVersion: API_VERSION,
        kind: KIND.cspi,
        metadata: { name, namespace: NS, labels: { [LABEL.cspc]: "flt", [LABEL.hostname]: node() } },
        spec: {
          hostName: node(),
          nodeSelector: { [LABEL.hostname]: node() },
          poolConfig: { ...resolvePoolConfig(undefined), roThresholdLimit: 40 },
          raidGroups: [group("mirror", "d1", "d2")],
        },
      },
      claim("d1"),
      claim("d2"),
    );
    await waitUntil(
      async () => faulty.reached("create", "done-then-hang"),
      60_000,
      () => `zpool create never ran${tails()}`,
    );
    // The pool exists; the daemon has not seen its create return. Someone writes to it meanwhile.
    data.write(`${pool}/vol1`);
    await kill();
    faulty.clear();
    const before = await getCspi();
    expect(before.status?.phase, "no status claims the pool before the daemon has seen it").to.not.equal(
      "ONLINE",
    );

    await start();
    // No CStorVolumeReplica names the pool: the count is a known 0 (the dataset written above is not a replica).
    const online = await waitForStatus(
      "phase ONLINE",
      (s) => s.phase === "ONLINE" && s.provisionedReplicas === 0,
    );
    expect(online.status).to.include({ importedOn: node(), poolName: pool, readOnly: false });
    expect(count("create"), "zpool create runs").to.equal(1);
    expect(dataGroups(pool)).to.deep.equal([[devices.d1, devices.d2]]);
    data.expectIntact("killed mid-create");
    tally.fault("daemon killed mid-create", true);
  });

  it("killed in the middle of zpool add: the restarted daemon finds the expansion done (no second add) and reports the grown capacity, data intact", async () => {
    const smaller = parseFloat((await getCspi()).status!.capacity!.total);
    faulty.set("add", "done-then-hang");
    await apply(claim("d3"), claim("d4"));
    await patchCspi([{ op: "add", path: "/spec/raidGroups/-", value: group("mirror", "d3", "d4") }]);
    await waitUntil(
      async () => faulty.reached("add", "done-then-hang"),
      60_000,
      () => `zpool add never ran${tails()}`,
    );
    await kill();
    faulty.clear();
    const stalled = (await getCspi()).status!.lastUpdateTime;
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(
      (await getCspi()).status!.lastUpdateTime,
      "no heartbeat from a dead daemon: the hooks can tell its status is stale",
    ).to.equal(stalled);

    await start();
    // The daemon that ran the add died before reporting it; the new one has nothing left to do and says what is.
    const expanded = await waitForStatus(
      "the grown capacity",
      (s) => s.lastUpdateTime !== stalled && parseFloat(s.capacity?.total ?? "0") > smaller * 1.5,
    );
    expect(expanded.status?.phase).to.equal("ONLINE");
    expect(
      findCondition(expanded.status?.conditions, "PoolExpansion")?.status,
      "no expansion claimed in progress",
    ).to.not.equal("True");
    expect(count("add"), "zpool add runs").to.equal(1);
    expect(dataGroups(pool)).to.deep.equal([
      [devices.d1, devices.d2],
      [devices.d3, devices.d4],
    ]);
    data.expectIntact("killed mid-expansion");
    tally.fault("daemon killed mid-expansion", true);
  });

  it("killed in the middle of zpool replace: the restarted daemon finds the replacement done (no second replace) and clears the new claim's predecessor mark, data intact", async () => {
    faulty.set("replace", "done-then-hang");
    await apply(claim("d5", { [ANNOTATION.bdPredecessor]: blockDeviceName(devices.d2) }));
    await patchCspi([
      { op: "test", path: "/spec/raidGroups/0/blockDevices/1/devLink", value: devices.d2 },
      {
        op: "replace",
        path: "/spec/raidGroups/0/blockDevices/1",
        value: group("mirror", "d5").blockDevices[0],
      },
    ]);
    await waitUntil(
      async () => faulty.reached("replace", "done-then-hang"),
      60_000,
      () => `zpool replace never ran${tails()}`,
    );
    await kill();
    faulty.clear();

    const stalled = (await getCspi()).status!.lastUpdateTime;
    await start();
    const replaced = await waitForStatus(
      "a status from the restarted daemon",
      (s) => s.lastUpdateTime !== stalled,
    );
    expect(replaced.status?.phase).to.equal("ONLINE");
    expect(
      findCondition(replaced.status?.conditions, "DiskReplacement")?.status,
      "no replacement claimed in progress",
    ).to.not.equal("True");
    expect(count("replace"), "zpool replace runs").to.equal(1);
    expect(dataGroups(pool)).to.deep.equal([
      [devices.d1, devices.d5],
      [devices.d3, devices.d4],
    ]);
    // The daemon that ran the replace died before any status said a replacement was under way; the new one
    // still reads the claims on its first pass and releases the predecessor, so cspc-sync can free the old device.
    const successor = `/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims/${claimName(blockDeviceName(devices.d5))}`;
    let marks: Record<string, string> | undefined;
    await waitUntil(
      async () =>
        !(marks = (await cluster.request(cluster.admin, "GET", successor)).body.metadata.annotations)?.[
          ANNOTATION.bdPredecessor
        ],
      30_000,
      () =>
        `the restarted daemon never cleared ${ANNOTATION.bdPredecessor} from the new device's claim (annotations: ${JSON.stringify(marks)})${tails()}`,
    );
    expect(
      findCondition((await getCspi()).status?.conditions, "DiskReplacement")?.status,
      "no replacement claimed in progress",
    ).to.not.equal("True");
    data.expectIntact("killed mid-replacement");
    tally.fault("daemon killed mid-replacement", true);
  });

  it("the API server goes away while the pool fills past roThresholdLimit: the pool turns read-only anyway; status says so once the API is back", async () => {
    await proxy.down();
    const filler = writeData(sandbox, `${pool}/fill`, 60);
    zpool("list");
    await waitUntil(
      async () => zfs("get", "-H", "-o", "value", "readonly", pool).trim() === "on",
      60_000,
      () => `the pool never turned read-only while the API server was away${tails()}`,
    );
    expect(await daemon!.exitWithin(100), "the daemon keeps running without the API server").to.equal(
      undefined,
    );
    // The pass that turns the pool read-only writes its status only after the zfs set: the failure may come later.
    await waitUntil(
      async () =>
        daemon!.lines.some((l) => l.msg === "status update failed" || l.msg.startsWith("CSPI watch failed")),
      30_000,
      () => `the daemon never noticed the API server was gone${tails()}`,
    );

    await proxy.up();
    const readOnly = await waitForStatus("status readOnly", (s) => s.readOnly === true);
    expect(readOnly.status).to.include({ phase: "ONLINE", readOnly: true });
    await patchCspi([{ op: "replace", path: "/spec/poolConfig/roThresholdLimit", value: 95 }]);
    await waitForStatus("readOnly cleared after the limit was raised", (s) => s.readOnly === false);
    expect(zfs("get", "-H", "-o", "value", "readonly", pool).trim()).to.equal("off");
    expect(checksum(filler.file)).to.equal(filler.sha);
    data.expectIntact("API server away while the pool filled");
    tally.fault("API server away and back", true);
    tally.fault("pool filled past roThresholdLimit", true);
  });

  it("ran no zpool command with -f, and every daemon started cleanly", () => {
    expect(faulty.invocations().filter((argv) => / -f\b/.test(argv))).to.deep.equal([]);
    for (const d of daemons) expect(d.otherOutput, d.tail()).to.deep.equal([]);
  });
});
