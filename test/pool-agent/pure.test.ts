// The agent's pure parts: readiness from a read of the pool, the export plan against what tgtd shows, tgtadm's
// output, and the configuration's refusals. The process tests (process.test.ts, exports.test.ts) run them for real.
import { expect } from "chai";
import { volumeChap } from "../../lib/volume/chap.js";
import { replicaIqn, targetInitiatorIqn } from "../../lib/volume/iqn.js";
import { emptyLayout, type PoolStatus } from "../../zfs/parse.js";
import { loadAgentConfig } from "../../pool-agent/config.js";
import { ConfigError } from "../../lib/settings.js";
import { actionFields, planExports, wantedExports } from "../../pool-agent/exports.js";
import type { AgentObservation, ReplicaOnPool } from "../../pool-agent/observe.js";
import { readiness } from "../../pool-agent/readiness.js";
import { tgtShownMegabytes, type TgtTarget } from "../../iscsi/tgt.js";

const POOL = "cstor-pool-a";
const status = (state: string, text?: string): PoolStatus => ({
  name: POOL,
  state,
  scan: { activity: "none", inProgress: false, text: "" },
  layout: emptyLayout(),
  ...(text ? { status: text } : {}),
});
const replica = (volume: string, extra: Partial<ReplicaOnPool> = {}): ReplicaOnPool => ({
  dataset: `${POOL}/${volume}`,
  volume,
  backingStore: `/dev/zvol/${POOL}/${volume}`,
  size: 4096,
  destroying: false,
  ...extra,
});
const observed = (state: string | undefined, replicas: ReplicaOnPool[] = []): AgentObservation => ({
  ...(state ? { status: status(state) } : {}),
  replicas,
});
const KEY = "k".repeat(32);
/** A target as the agent makes it for `volume` (or as `changes` says it differs). */
const ours = (tid: number, volume: string, changes: Partial<TgtTarget> = {}): TgtTarget => ({
  tid,
  iqn: replicaIqn(volume),
  luns: { 1: { backingStore: `/dev/zvol/${POOL}/${volume}`, flags: ["sync"] } },
  acl: [targetInitiatorIqn(volume)],
  accounts: [volume],
  loggedIn: [],
  ...changes,
});
const other = (tid: number, accounts: string[] = []): TgtTarget => ({
  tid,
  iqn: "iqn.2026-11.org.example:other",
  luns: {},
  acl: [],
  accounts,
  loggedIn: [],
});
const lun1 = (backingStore: string, flags = ["sync"]) => ({ 1: { backingStore, flags } });

describe("pool agent: readiness", () => {
  it("is ready ONLINE and DEGRADED, and not otherwise, always with the reason", () => {
    expect(readiness(POOL, { observation: observed("ONLINE") })).to.deep.equal({
      ready: true,
      reason: `pool ${POOL} is ONLINE`,
    });
    expect(
      readiness(POOL, {
        observation: {
          status: status("DEGRADED", "One or more devices\n\tcould not be opened."),
          replicas: [],
        },
      }),
    ).to.deep.equal({
      ready: true,
      reason: `pool ${POOL} is DEGRADED: One or more devices could not be opened.`,
    });
    for (const state of ["FAULTED", "UNAVAIL", "SUSPENDED", ""])
      expect(readiness(POOL, { observation: observed(state) }).ready, state).to.equal(false);
    expect(readiness(POOL, { observation: observed(undefined) }).reason).to.match(
      /not imported on this node/,
    );
    expect(readiness(POOL, { error: "zpool status exited with 1" })).to.deep.equal({
      ready: false,
      reason: `pool ${POOL} could not be read, so its state is unknown: zpool status exited with 1`,
    });
    expect(readiness(POOL, undefined)).to.deep.equal({
      ready: false,
      reason: `pool ${POOL} has not been read yet`,
    });
  });
});

describe("pool agent: export plan", () => {
  it("creates a target per replica with the smallest free ids, admitting the volume's target with its CHAP, and nothing once tgtd has them (idempotent)", () => {
    const { wanted } = wantedExports(observed("ONLINE", [replica("v1"), replica("v2")]), KEY);
    expect(wanted[0]).to.deep.equal({
      iqn: replicaIqn("v1"),
      volume: "v1",
      backingStore: `/dev/zvol/${POOL}/v1`,
      initiator: targetInitiatorIqn("v1"),
      chap: volumeChap(KEY, "v1"),
      sizeBytes: 4096,
    });
    const first = planExports(wanted, [other(1)]);
    expect(first).to.deep.equal([
      { kind: "create", tid: 2, iqn: replicaIqn("v1"), want: wanted[0] },
      { kind: "create", tid: 3, iqn: replicaIqn("v2"), want: wanted[1] },
    ]);
    expect(planExports(wanted, [other(1), ours(2, "v1"), ours(3, "v2")])).to.deep.equal([]);
    // Another key is another password: the plan cannot see it (tgtd never shows one), the pool pod's restart does.
    expect(
      wantedExports(observed("ONLINE", [replica("v1")]), "x".repeat(32)).wanted[0].chap,
    ).to.not.deep.equal(wanted[0].chap);
  });

  it("removes ours that are unwanted or wrong (other backing store, cached writes, no ACL, a duplicate) and leaves other targets alone", () => {
    const { wanted } = wantedExports(
      observed("DEGRADED", [replica("v1"), replica("v2"), replica("v3"), replica("v4")]),
      KEY,
    );
    const plan = planExports(wanted, [
      ours(1, "v1", { luns: lun1("/elsewhere") }),
      ours(2, "v2", { acl: [] }),
      ours(3, "v3"),
      ours(4, "v3"),
      ours(5, "gone"),
      other(6),
      ours(7, "v4", { luns: lun1(`/dev/zvol/${POOL}/v4`, []) }),
    ]);
    expect(plan.map((a) => [a.kind, a.tid, a.iqn, a.kind === "delete" ? a.why : ""])).to.deep.equal([
      ["delete", 1, replicaIqn("v1"), `it serves LUN 1 on /elsewhere, not LUN 1 on /dev/zvol/${POOL}/v1`],
      ["delete", 2, replicaIqn("v2"), "it admits no initiator (an earlier creation stopped half way)"],
      ["delete", 4, replicaIqn("v3"), "a second target with the same name"],
      [
        "delete",
        5,
        replicaIqn("gone"),
        "its replica is not on the pool, is being destroyed, or the pool is not serving",
      ],
      ["delete", 7, replicaIqn("v4"), 'its LUN is not written through (backing store flags "", not sync)'],
      ["create", 1, replicaIqn("v1"), ""],
      ["create", 2, replicaIqn("v2"), ""],
      ["create", 4, replicaIqn("v4"), ""],
    ]);
  });

  it("closes an export that admits ALL, another initiator or no CHAP account: deleted and made again (how exports made before ADR 0040 close on upgrade)", () => {
    const { wanted } = wantedExports(
      observed("ONLINE", [replica("v1"), replica("v2"), replica("v3"), replica("v4"), replica("v5")]),
      KEY,
    );
    const plan = planExports(wanted, [
      // As the agent made them before: ACL ALL, no account, cached writes.
      ours(1, "v1", { acl: ["ALL"], accounts: [], luns: lun1(`/dev/zvol/${POOL}/v1`, []) }),
      ours(2, "v2", { acl: ["ALL"] }),
      ours(3, "v3", { acl: [targetInitiatorIqn("v3"), "iqn.2026-11.org.example:intruder"] }),
      ours(4, "v4", { accounts: [] }),
      ours(5, "v5", { accounts: ["v5", "someone"] }),
    ]);
    expect(plan.filter((a) => a.kind === "delete").map((a) => [a.tid, a.why])).to.deep.equal([
      [1, "it admits every initiator (ACL ALL)"],
      [2, "it admits every initiator (ACL ALL)"],
      [
        3,
        `it admits ${targetInitiatorIqn("v3")}, iqn.2026-11.org.example:intruder, not only ${targetInitiatorIqn("v3")}`,
      ],
      [4, "it has no CHAP account, not only the volume's (v4)"],
      [5, "it has CHAP accounts v5, someone, not only the volume's (v5)"],
    ]);
    expect(plan.filter((a) => a.kind === "create").map((a) => [a.tid, a.iqn])).to.deep.equal(
      [1, 2, 3, 4, 5].map((tid) => [tid, replicaIqn(`v${tid}`)]),
    );
  });

  it("deletes a removed export's accounts, but never one a remaining target holds (deleting it would unbind it there)", () => {
    const { wanted } = wantedExports(observed("ONLINE", [replica("v1")]), KEY);
    const plan = planExports(wanted, [
      ours(1, "v1"),
      // A duplicate of v1 holding v1's account, and one holding an account another target holds too.
      ours(2, "v1"),
      ours(3, "gone", { accounts: ["gone", "shared"] }),
      other(4, ["shared"]),
    ]);
    expect(plan).to.deep.equal([
      {
        kind: "delete",
        tid: 2,
        iqn: replicaIqn("v1"),
        why: "a second target with the same name",
        accounts: [],
      },
      {
        kind: "delete",
        tid: 3,
        iqn: replicaIqn("gone"),
        why: "its replica is not on the pool, is being destroyed, or the pool is not serving",
        accounts: ["gone"],
      },
    ]);
  });

  it("opens a grown replica again so tgtd serves its new size, but only while no initiator is logged in to it; never one served at its size or larger", () => {
    const GiB = 1024 ** 3;
    const { wanted } = wantedExports(
      observed("ONLINE", [replica("v1", { size: 2 * GiB }), replica("v2", { size: 2 * GiB }), replica("v3")]),
      KEY,
    );
    const served = (tid: number, volume: string, bytes: number, loggedIn: string[] = []) =>
      ours(tid, volume, {
        luns: {
          1: {
            backingStore: `/dev/zvol/${POOL}/${volume}`,
            flags: ["sync"],
            shownMegabytes: tgtShownMegabytes(bytes),
          },
        },
        loggedIn,
      });
    // tgt's own rounding: a 4 MiB LUN shows "Size: 4 MB", 1 GiB "Size: 1074 MB".
    expect([tgtShownMegabytes(4 * 1024 ** 2), tgtShownMegabytes(GiB)]).to.deep.equal([4, 1074]);
    const current = [
      served(1, "v1", GiB),
      served(2, "v2", GiB, [targetInitiatorIqn("v2")]),
      served(3, "v3", 4096),
    ];
    expect(planExports(wanted, current)).to.deep.equal([
      {
        kind: "reopen",
        tid: 1,
        iqn: replicaIqn("v1"),
        backingStore: `/dev/zvol/${POOL}/v1`,
        why: `the replica grew to ${2 * GiB} bytes; tgtd serves 1074 MB`,
      },
    ]);
    // Once reopened, tgtd shows the new size: nothing more to do.
    expect(planExports(wanted, [served(1, "v1", 2 * GiB), current[1], current[2]])).to.deep.equal([]);
  });

  it("never shows the password in what it logs of an action", () => {
    const { wanted } = wantedExports(observed("ONLINE", [replica("v1")]), KEY);
    const [create] = planExports(wanted, []);
    const fields = actionFields(create);
    expect(fields).to.deep.equal({
      kind: "create",
      tid: 1,
      iqn: replicaIqn("v1"),
      volume: "v1",
      backingStore: `/dev/zvol/${POOL}/v1`,
      initiator: targetInitiatorIqn("v1"),
      user: "v1",
      sizeBytes: 4096,
    });
    expect(JSON.stringify(fields)).to.not.contain(wanted[0].chap.password);
  });

  it("serves nothing of a pool that is not serving; skips replicas being destroyed or unfinished, and refuses a name too long for iSCSI", () => {
    for (const state of [undefined, "FAULTED", "UNAVAIL"])
      expect(wantedExports(observed(state, [replica("v1")]), KEY).wanted, String(state)).to.deep.equal([]);
    const long = "v".repeat(200);
    const result = wantedExports(
      observed("ONLINE", [
        replica("d", { destroying: true }),
        replica("u", { size: undefined }),
        replica(long),
        replica("ok"),
      ]),
      KEY,
    );
    expect(result.wanted.map((w) => w.volume)).to.deep.equal(["ok"]);
    expect(result.refused).to.have.length(1);
    expect(result.refused[0]).to.contain("longer than 223 bytes").and.contain("shorter name");
  });
});

describe("pool agent: configuration", () => {
  it("derives the pool from the CSPI and refuses what it cannot use, naming the variable and the fix", () => {
    const config = loadAgentConfig({
      OPENEBS_IO_CSPI_NAME: "pool-a",
      ZFS_COMMAND_PREFIX: '["nsenter","-t","1","-m","--"]',
      CSTOR_REPLICA_CHAP_KEY: KEY,
    });
    expect(config).to.deep.include({
      cspi: "pool-a",
      pool: "cstor-pool-a",
      port: 9500,
      pollIntervalMs: 10_000,
      tgtadm: ["tgtadm", "-C", "0"],
      chapKey: KEY,
    });
    expect(config.zfs.zpool).to.deep.equal(["nsenter", "-t", "1", "-m", "--", "zpool"]);
    const base = { OPENEBS_IO_CSPI_NAME: "pool-a", CSTOR_REPLICA_CHAP_KEY: KEY };
    const refused: [Record<string, string>, RegExp][] = [
      [{}, /^OPENEBS_IO_CSPI_NAME is not set: the pool Deployment sets it/],
      [
        { ...base, OPENEBS_IO_ZPOOL_NAME: "other" },
        /OPENEBS_IO_ZPOOL_NAME="other" is not the pool of CStorPoolInstance pool-a \(cstor-pool-a\): unset it or set it to cstor-pool-a/,
      ],
      [{ ...base, PORT: "http" }, /PORT="http" is not a port number \(1-65535\): set e.g. PORT=9500/],
      [{ ...base, TGT_CONTROL_PORT: "40000" }, /TGT_CONTROL_PORT="40000" is not a port number \(0-32767\)/],
      [{ ...base, POLL_INTERVAL_SECONDS: "0" }, /POLL_INTERVAL_SECONDS="0" is not a whole number of seconds/],
      [
        { ...base, ZFS_COMMAND_PREFIX: "nsenter -t 1 -m --" },
        /ZFS_COMMAND_PREFIX must be a JSON array of strings/,
      ],
      // No key, or an unusable one: nothing is served, and the message names the Secret and the install step.
      [
        { OPENEBS_IO_CSPI_NAME: "pool-a" },
        /^CSTOR_REPLICA_CHAP_KEY is not set: create the Secret cstor-replica-chap-key \(docs\/install.md\).*The pool agent serves no replica without it; its pool Deployment sets it from the Secret cstor-replica-chap-key \(key "key"\)/,
      ],
      [{ ...base, CSTOR_REPLICA_CHAP_KEY: "  " }, /^CSTOR_REPLICA_CHAP_KEY is not set/],
      [
        { ...base, CSTOR_REPLICA_CHAP_KEY: "short" },
        /^CSTOR_REPLICA_CHAP_KEY is 5 characters long: it must have at least 32 .*Secret cstor-replica-chap-key .*docs\/install.md/,
      ],
    ];
    for (const [env, message] of refused)
      expect(() => loadAgentConfig(env), JSON.stringify(env)).to.throw(ConfigError, message);
    // The message never quotes the key it refuses.
    expect(() => loadAgentConfig({ ...base, CSTOR_REPLICA_CHAP_KEY: "secret-but-short" }))
      .to.throw(ConfigError)
      .with.property("message")
      .that.does.not.contain("secret-but-short");
  });
});
