// The pool agent's iSCSI exports (docs/adr/0011-a-replica-is-a-zvol-on-the-pool-data-reaches.md, docs/adr/0032-the-pool-agent-what-it-reads-how-it-exports.md and
// docs/adr/0040-the-target-agent-credentials-names-and-status.md), end to end: a tgtd of the test's own inside
// a zfs-fuse node, the agent as the pool Deployment starts it driving that tgtd, a `file`-backend replica made
// with the node daemon's own commands, and libiscsi (qemu-img, iscsi-inq) logging in as the volume's target with
// its CHAP, or as someone else: data written and read back, and every other login refused.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { zpoolName } from "../../lib/names.js";
import { volumeChap } from "../../lib/volume/chap.js";
import { replicaIqn, targetInitiatorIqn } from "../../lib/volume/iqn.js";
import { fileBackend, type Replica } from "../../node-daemon/replicas.js";
import { REPLICA_FILE, REPLICA_PROPERTY } from "../../zfs/layout.js";
import { parseTargets, tgtShownMegabytes, type TgtTarget } from "../../iscsi/tgt.js";
import { waitUntil } from "../../testkit/kube.js";
import {
  AUTHENTICATION_FAILURE,
  inquiry,
  lunSize,
  readLun,
  TARGET_NOT_FOUND,
  writeLun,
  type Login,
} from "../support/initiator.js";
import { POOL_AGENT_CHAP_KEY, PoolAgentProcess } from "../support/pool-agent-process.js";
import type { RunResult } from "../support/installed.js";
import { Tgtd } from "../support/tgtd.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";
import { cspiFor, MiB, requireZfs, ZfsSandbox } from "../../testkit/zfs.js";
import { makeFileReplica } from "../support/file-replica.js";

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

describe("pool agent: replicas exported over iSCSI through tgtd (file backend, zfs-fuse node)", function () {
  this.timeout(3 * 60_000);
  let sandbox: ZfsSandbox;
  let node: ZfsNode;
  let tgtd: Tgtd;
  let agent: PoolAgentProcess | undefined;

  before(() => requireZfs());
  beforeEach(async () => {
    sandbox = new ZfsSandbox();
    node = await startNode(`pax-${sandbox.id}`);
    tgtd = await Tgtd.start(node);
  });
  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    await tgtd.stop();
    await node.stop();
    sandbox.cleanup();
  });

  const startAgent = async (cspi: string) =>
    PoolAgentProcess.start(cspiFor(cspi, node.name, []), node.name, {
      ZFS_COMMAND_PREFIX: node.commandPrefixEnv,
      TGT_CONTROL_PORT: String(tgtd.controlPort),
    });
  const targets = async () => {
    const shown = await tgtd.tgtadm("--mode", "target", "--op", "show");
    if (shown.code !== 0) throw new Error(`tgtadm show: ${shown.stderr}`);
    return parseTargets(shown.stdout);
  };
  const waitForTargets = async (what: string, done: (targets: TgtTarget[]) => boolean) => {
    let now: TgtTarget[] = [];
    await waitUntil(
      async () => done((now = await targets())),
      60_000,
      () => `tgtd never had ${what}: it has ${JSON.stringify(now)}${agent?.tail() ?? ""}`,
    );
  };
  const has = (iqn: string) => (now: TgtTarget[]) => now.some((t) => t.iqn === iqn);
  const mustTgtadm = async (...args: string[]) => {
    const result = await tgtd.tgtadm(...args);
    if (result.code !== 0) throw new Error(`tgtadm ${args.join(" ")}: ${result.stderr}`);
  };
  const loginOutcome = (result: RunResult): string => {
    if (result.code === 0) return "admitted";
    if (TARGET_NOT_FOUND.test(result.stderr)) return "target hidden";
    if (AUTHENTICATION_FAILURE.test(result.stderr)) return "CHAP refused";
    return result.stderr;
  };
  /** Everything the agent printed, to look for a secret in. */
  const printed = (process: PoolAgentProcess) =>
    JSON.stringify(process.lines) + process.otherOutput.join("\n");

  it("closes an export made before ADR 0040 at its first pass, then serves the replica written through, to the volume's target with its CHAP only: data written over iSCSI is in the replica file and reads back, also once the replica grew and the agent reopened it", async () => {
    const cspi = sandbox.name("exp");
    const pool = zpoolName(cspi);
    node.zpool("create", "-o", "failmode=continue", "-O", "canmount=off", pool, sandbox.file("d1"));
    const {
      volume,
      replica,
      dir: replicaDir,
    } = makeFileReplica(sandbox, { pool, cspi }, (argv: string[]) => node.run(argv));
    const replicaFile = join(replicaDir, replica.dataset, REPLICA_FILE);
    const iqn = replicaIqn(volume);
    // Another tgt target on the same tgtd is not the agent's: left alone.
    await mustTgtadm(
      "--mode",
      "target",
      "--op",
      "new",
      "--tid",
      "1",
      "--targetname",
      "iqn.2026-11.org.example:other",
    );
    // The replica's export as the agent made it before ADR 0040: ACL ALL, no CHAP. Anyone logs in.
    await mustTgtadm("--mode", "target", "--op", "new", "--tid", "2", "--targetname", iqn);
    await mustTgtadm("--mode", "logicalunit", "--op", "new", "--tid", "2", "--lun", "1", "-b", replicaFile);
    await mustTgtadm("--mode", "target", "--op", "bind", "--tid", "2", "--initiator-address", "ALL");
    const anyone: Login = { portal: tgtd.portal, iqn, initiator: "iqn.2026-11.org.example:anyone" };
    const open = await inquiry(anyone);
    expect(open.code, `the old export admits anyone: ${open.stderr}`).to.equal(0);

    agent = await startAgent(cspi);
    const chap = volumeChap(POOL_AGENT_CHAP_KEY, volume);
    const initiator = targetInitiatorIqn(volume);
    await waitForTargets(`${iqn} admitting ${initiator}`, (now) =>
      now.some((t) => t.iqn === iqn && t.acl.join() === initiator),
    );
    await agent.logged("replica exported");
    const target = (await targets()).find((t) => t.iqn === iqn)!;
    expect(target).to.deep.equal({
      tid: 2,
      iqn,
      luns: { 1: { backingStore: replicaFile, flags: ["sync"], shownMegabytes: tgtShownMegabytes(4 * MiB) } },
      acl: [initiator],
      accounts: [volume],
      loggedIn: [],
    });
    expect(
      agent.lines.filter((l) => /export/.test(l.msg)).map((l) => [l.msg, l.why ?? l.initiator]),
      "closed by its first pass: deleted, and made again",
    ).to.deep.equal([
      ["export removed", "it admits every initiator (ACL ALL)"],
      ["replica exported", initiator],
    ]);
    expect(await agent.metric(`cstor_pool_replica_exports{pool="${pool}"}`)).to.equal(1);

    // Only the volume's target with the volume's password logs in.
    const right: Login = { portal: tgtd.portal, iqn, initiator, user: chap.user, password: chap.password };
    const refusals = await Promise.all([
      inquiry(anyone),
      inquiry({ ...anyone, user: chap.user, password: chap.password }),
      inquiry({ ...right, initiator: targetInitiatorIqn(`${volume}-other`) }),
      inquiry({ ...right, password: volumeChap("another-key-".repeat(3), volume).password }),
      inquiry({ ...right, user: undefined, password: undefined }),
    ]);
    // Without CHAP tgtd refuses the login first; with it, it hides the target from names its ACL does not hold.
    expect(refusals.map(loginOutcome)).to.deep.equal([
      "CHAP refused",
      "target hidden",
      "target hidden",
      "CHAP refused",
      "CHAP refused",
    ]);

    const data = randomBytes(replica.bytes);
    const written = join(sandbox.dir, "written.bin");
    const readBack = join(sandbox.dir, "read-back.bin");
    writeFileSync(written, data);
    await writeLun(right, written);
    expect(node.checksum(replicaFile), "the replica file holds what the initiator wrote").to.equal(
      sha256(data),
    );
    await readLun(right, readBack);
    expect(sha256(readFileSync(readBack)), "and reads it back over iSCSI").to.equal(sha256(data));

    // The volume grows: the node daemon's commands grow the file; nobody is logged in, so the agent reopens it.
    const grown = { ...replica, bytes: 8 * MiB };
    const dataset = { name: replica.dataset, properties: { mountpoint: join(replicaDir, replica.dataset) } };
    for (const command of fileBackend(replicaDir).grow(grown, dataset))
      node.run([command.program, ...command.args]);
    await agent.logged("replica reopened at its new size");
    expect(await lunSize(right), "tgtd serves the grown replica").to.equal(grown.bytes);
    await readLun(right, readBack);
    expect(sha256(readFileSync(readBack).subarray(0, data.length)), "with its data").to.equal(sha256(data));

    // A restarted agent adopts the export: SIGTERM leaves it in tgtd, the next agent changes nothing.
    expect(await agent.stop()).to.deep.equal({ code: 0, signal: null });
    const logs = [printed(agent)];
    expect(
      (await targets()).find((t) => t.iqn === iqn),
      "the export outlives the agent",
    ).to.deep.equal({
      ...target,
      luns: { 1: { ...target.luns[1], shownMegabytes: tgtShownMegabytes(grown.bytes) } },
    });
    agent = await startAgent(cspi);
    await agent.readyz(200, /is ONLINE/);
    await waitUntil(
      async () => (await agent!.metric(`cstor_pool_replica_exports{pool="${pool}"}`)) === 1,
      30_000,
      () => `no exports metric${agent!.tail()}`,
    );
    expect(
      agent.lines.filter((l) => /export|reopen/.test(l.msg)),
      "nothing exported, removed or reopened again",
    ).to.deep.equal([]);

    // The node daemon's destroy handshake: marked, unexported by the agent, then destroyed (the file is free).
    node.zfs("set", `${REPLICA_PROPERTY.destroying}=on`, replica.dataset);
    await waitForTargets(`no ${iqn}`, (now) => !has(iqn)(now));
    expect(
      (await targets()).map((t) => t.iqn),
      "the other target stays",
    ).to.deep.equal(["iqn.2026-11.org.example:other"]);
    expect(await tgtd.tgt.accounts(), "the volume's account goes with its export").to.not.include(volume);
    // As the daemon's next pass does: zfs-fuse may still call the dataset busy a moment after tgtd let go.
    let busy = "";
    await waitUntil(
      async () => {
        try {
          node.zfs("destroy", "-r", replica.dataset);
          return true;
        } catch (error) {
          busy = String((error as { stderr?: string }).stderr ?? error);
          if (!/busy/.test(busy)) throw error;
          return false;
        }
      },
      30_000,
      () => `zfs destroy stayed busy after the export was removed: ${busy}`,
    );
    expect(node.zfs("list", "-H", "-o", "name", "-r", pool)).to.not.contain(replica.dataset);
    expect(agent.lines.filter((l) => l.level === "warn" && /export/.test(l.msg))).to.deep.equal([]);
    logs.push(printed(agent));
    for (const log of logs) expect(log).to.not.contain(chap.password).and.not.contain(POOL_AGENT_CHAP_KEY);
  });

  it("holds the pool busy while it serves it, so the pool moves only once the pool pod is gone; exports again when the pool is back", async () => {
    const cspi = sandbox.name("move");
    const pool = zpoolName(cspi);
    node.zpool("create", "-o", "failmode=continue", "-O", "canmount=off", pool, sandbox.file("d1"));
    const volume = `vol-${sandbox.id}`;
    const replica: Replica = {
      cvr: `${volume}-${cspi}`,
      volume,
      replicaId: `${volume}-r1`,
      dataset: `${pool}/${volume}`,
      bytes: MiB,
    };
    for (const command of fileBackend(join(sandbox.dir, "replicas")).create(replica))
      node.run([command.program, ...command.args]);
    const iqn = replicaIqn(volume);
    agent = await startAgent(cspi);
    await waitForTargets(iqn, has(iqn));

    expect(() => node.zpool("export", pool), "tgtd holds the replica open").to.throw(/busy/);
    // The pool pod is deleted (a CSPI's node changes: its Deployment rolls, Recreate): agent and tgtd end.
    await agent.stop();
    agent = undefined;
    await tgtd.stop();
    node.zpool("export", pool);

    // A pool pod on a node without the pool: not ready, nothing served.
    tgtd = await Tgtd.start(node);
    agent = await startAgent(cspi);
    await agent.readyz(503, /not imported/);
    await waitUntil(
      async () => (await agent!.metric(`cstor_pool_replica_exports{pool="${pool}"}`)) === 0,
      30_000,
      () => `no exports metric${agent!.tail()}`,
    );
    expect(await targets()).to.deep.equal([]);

    node.zpool("import", "-d", sandbox.dir, pool);
    await agent.readyz(200, /is ONLINE/);
    await waitForTargets(iqn, has(iqn));
  });
});
