// The pool agent as the pool Deployment starts it (docs/adr/0010-the-hosts-zfs-owns-the-pool-the-pool-pod-runs.md and docs/adr/0032-the-pool-agent-what-it-reads-how-it-exports.md): a process with the env
// cspi-sync renders, reading a real zfs-fuse pool on its own simulated node through ZFS_COMMAND_PREFIX, as the
// pod reads the host's pool through nsenter. Its /readyz follows the pool (ready ONLINE and DEGRADED; 503
// with the reason when exported, absent, UNAVAIL or FAULTED) and its /metrics are the pool's numbers.
import { expect } from "chai";
import { zpoolName } from "../../lib/names.js";
import { fileBackend, type Replica } from "../../node-daemon/replicas.js";
import { waitUntil } from "../../testkit/kube.js";
import { PoolAgentProcess } from "../support/pool-agent-process.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";
import { cspiFor, requireZfs, ZfsSandbox } from "../../testkit/zfs.js";

describe("pool agent: the process the pool Deployment runs, on a zfs-fuse node", function () {
  this.timeout(3 * 60_000);
  let sandbox: ZfsSandbox;
  let node: ZfsNode;
  const agents: PoolAgentProcess[] = [];

  before(() => requireZfs());
  beforeEach(async () => {
    sandbox = new ZfsSandbox();
    node = await startNode(`pa-${sandbox.id}`);
  });
  afterEach(async () => {
    for (const agent of agents.splice(0)) {
      const ending = await agent.stop();
      expect(ending, `${agent.label} stops on SIGTERM${agent.tail()}`).to.deep.equal({
        code: 0,
        signal: null,
      });
    }
    await node.stop();
    sandbox.cleanup();
  });

  /** A pool as the node daemon makes it (root dataset not mounted), failmode=continue since some are faulted here. */
  const createPool = (cspi: string, ...vdevs: string[]): string => {
    const pool = zpoolName(cspi);
    node.zpool("create", "-o", "failmode=continue", "-O", "canmount=off", pool, ...vdevs);
    return pool;
  };
  const startAgent = async (cspi: string): Promise<PoolAgentProcess> => {
    const agent = await PoolAgentProcess.start(cspiFor(cspi, node.name, []), node.name, {
      ZFS_COMMAND_PREFIX: node.commandPrefixEnv,
    });
    agents.push(agent);
    return agent;
  };
  /** A file-backend replica, made with the node daemon's own commands for it. */
  const createReplica = (pool: string, volume: string, bytes: number): Replica => {
    const replica: Replica = {
      cvr: `${volume}-cvr`,
      volume,
      replicaId: `${volume}-r1`,
      dataset: `${pool}/${volume}`,
      bytes,
    };
    for (const command of fileBackend(`${sandbox.dir}/replicas`).create(replica))
      node.run([command.program, ...command.args]);
    return replica;
  };
  const zfsBytes = (dataset: string, property: string): number =>
    Number(node.zfs("get", "-H", "-p", "-o", "value", property, dataset).trim());

  it("is ready while its pool is ONLINE, and its /metrics are the pool's health, space, read-only flag and replicas", async () => {
    const cspi = sandbox.name("online");
    const pool = createPool(cspi, "mirror", sandbox.file("d1"), sandbox.file("d2"));
    const replica = createReplica(pool, `vol-${sandbox.id}`, 8 * 1024 * 1024);
    const agent = await startAgent(cspi);

    expect(await agent.readyz(200, /is ONLINE/)).to.equal(`pool ${pool} is ONLINE\n`);
    expect(await agent.metric(`cstor_pool_agent_health{pool="${pool}",cspi="${cspi}"}`)).to.equal(0);
    expect(await agent.metric(`cstor_pool_agent_readonly{pool="${pool}"}`)).to.equal(0);
    expect(
      await agent.metric(`cstor_pool_replica_size_bytes{pool="${pool}",volume="${replica.volume}"}`),
      "the replica's file size",
    ).to.equal(replica.bytes);
    // zfs-fuse settles its accounting a moment after a change: compared once the agent's next read has it.
    const kinds = ["used", "free", "total"];
    let expected: number[] = [];
    let seen: (number | undefined)[] = [];
    await waitUntil(
      async () => {
        const [used, available, replicaUsed] = [
          zfsBytes(pool, "used"),
          zfsBytes(pool, "available"),
          zfsBytes(replica.dataset, "used"),
        ];
        expected = [used, available, used + available, replicaUsed];
        seen = [
          ...(await Promise.all(
            kinds.map((kind) =>
              agent.metric(`cstor_pool_agent_capacity_bytes{pool="${pool}",kind="${kind}"}`),
            ),
          )),
          await agent.metric(`cstor_pool_replica_used_bytes{pool="${pool}",volume="${replica.volume}"}`),
        ];
        return JSON.stringify(seen) === JSON.stringify(expected);
      },
      30_000,
      () =>
        `the pool's used, free, total and the replica's used as zfs get -p prints them: ${JSON.stringify(expected)}; /metrics: ${JSON.stringify(seen)}`,
    );

    expect(await agent.get("/healthz")).to.deep.equal({ status: 200, body: "ok\n" });
    expect((await agent.get("/other")).status).to.equal(404);
  });

  it("is not ready, with the reason, when the pool is exported or was never there; ready again once imported", async () => {
    const cspi = sandbox.name("moved");
    const pool = createPool(cspi, sandbox.file("d1"));
    const agent = await startAgent(cspi);
    await agent.readyz(200, /is ONLINE/);

    node.zpool("export", pool);
    expect(await agent.readyz(503, /not imported/)).to.equal(
      `pool ${pool} is not imported on this node (exported, destroyed, or not yet imported by the node daemon)\n`,
    );
    expect(
      await agent.metric(`cstor_pool_agent_health{pool="${pool}",cspi="${cspi}"}`),
      "-1: not imported here",
    ).to.equal(-1);
    node.zpool("import", "-d", sandbox.dir, pool);
    await agent.readyz(200, /is ONLINE/);

    const absent = await startAgent(sandbox.name("absent"));
    expect(await absent.readyz(503, /not imported/)).to.contain(
      `pool ${zpoolName(sandbox.name("absent"))} is not imported on this node`,
    );
  });

  it("is ready while its pool is DEGRADED; not ready when it is UNAVAIL or FAULTED (the node restarted without its devices)", async () => {
    const [m1, m2, lost, blank] = [
      sandbox.file("m1"),
      sandbox.file("m2"),
      sandbox.file("lost"),
      sandbox.file("blank"),
    ];
    const degraded = createPool(sandbox.name("degraded"), "mirror", m1, m2);
    const unavail = createPool(sandbox.name("unavail"), lost);
    const faulted = createPool(sandbox.name("faulted"), blank);
    const [onDegraded, onUnavail, onFaulted] = await Promise.all(
      ["degraded", "unavail", "faulted"].map((label) => startAgent(sandbox.name(label))),
    );
    for (const agent of [onDegraded, onUnavail, onFaulted]) await agent.readyz(200, /is ONLINE/);

    // A mirror loses one device, a stripe its only device, another stripe its labels: zfs-fuse opens them at start.
    node.run(["rm", m2, lost]);
    node.run(["truncate", "-s", "0", blank]);
    node.run(["truncate", "-s", "128M", blank]);
    await node.restartZfs();

    expect(await onDegraded.readyz(200, /is DEGRADED/)).to.match(
      new RegExp(`^pool ${degraded} is DEGRADED: One or more devices could not be opened`),
    );
    expect(await onUnavail.readyz(503, /is UNAVAIL/)).to.match(
      new RegExp(`^pool ${unavail} is UNAVAIL: One or more devices could not be opened.*insufficient`),
    );
    expect(await onFaulted.readyz(503, /is FAULTED/)).to.match(
      new RegExp(`^pool ${faulted} is FAULTED: .*label is missing or invalid`),
    );
    expect(
      await onDegraded.metric(
        `cstor_pool_agent_health{pool="${degraded}",cspi="${sandbox.name("degraded")}"}`,
      ),
    ).to.equal(1);
    expect(
      await onFaulted.metric(`cstor_pool_agent_health{pool="${faulted}",cspi="${sandbox.name("faulted")}"}`),
    ).to.equal(2);
    expect(
      await onUnavail.metric(`cstor_pool_agent_health{pool="${unavail}",cspi="${sandbox.name("unavail")}"}`),
    ).to.equal(4);
  });
});

describe("pool agent: the process refuses to start without a usable CHAP key", function () {
  this.timeout(60_000);

  it("exits 1 before it serves anything when its Secret holds a key too short to keep passwords secret, naming the Secret and never the key", async () => {
    const key = "short-but-secret";
    const agent = await PoolAgentProcess.spawn(cspiFor("no-key", "node-a", []), "node-a", {}, key);
    const ending = await agent.exitWithin(30_000);
    expect(ending, agent.tail()).to.deep.equal({ code: 1, signal: null });
    // Its stderr may arrive just after its exit.
    await waitUntil(
      async () => agent.otherOutput.length > 0,
      5_000,
      () => `no output${agent.tail()}`,
    );
    const output = agent.otherOutput.join("");
    expect(output).to.match(
      /^pool agent failed: CSTOR_REPLICA_CHAP_KEY is 16 characters long: it must have at least 32 .*Secret cstor-replica-chap-key .*docs\/install.md/,
    );
    expect(output + JSON.stringify(agent.lines)).to.not.contain(key);
    expect(agent.lines.map((l) => l.msg)).to.not.include("pool agent started");
  });
});
