// The agent's pure parts: readiness from a read of the pool, the export plan against what tgtd shows, tgtadm's
// output, and the configuration's refusals. The process tests (process.test.ts, exports.test.ts) run them for real.
import { expect } from "chai";
import { replicaIqn } from "../../lib/volume/iqn.js";
import { emptyLayout, type PoolStatus } from "../../zfs/parse.js";
import { loadAgentConfig } from "../../pool-agent/config.js";
import { planExports, wantedExports } from "../../pool-agent/exports.js";
import type { AgentObservation, ReplicaOnPool } from "../../pool-agent/observe.js";
import { readiness } from "../../pool-agent/readiness.js";
import type { TgtTarget } from "../../iscsi/tgt.js";

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
const target = (tid: number, iqn: string, lun1?: string, acl = ["ALL"]): TgtTarget => ({
  tid,
  iqn,
  luns: lun1 ? { 1: lun1 } : {},
  acl,
});

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
  it("creates a target per replica with the smallest free ids, and nothing once tgtd has them (idempotent)", () => {
    const { wanted } = wantedExports(observed("ONLINE", [replica("v1"), replica("v2")]));
    const first = planExports(wanted, [target(1, "iqn.2026-11.org.example:other")]);
    expect(first).to.deep.equal([
      { kind: "create", tid: 2, iqn: replicaIqn("v1"), volume: "v1", backingStore: `/dev/zvol/${POOL}/v1` },
      { kind: "create", tid: 3, iqn: replicaIqn("v2"), volume: "v2", backingStore: `/dev/zvol/${POOL}/v2` },
    ]);
    const applied = [
      target(1, "iqn.2026-11.org.example:other"),
      target(2, replicaIqn("v1"), `/dev/zvol/${POOL}/v1`),
      target(3, replicaIqn("v2"), `/dev/zvol/${POOL}/v2`),
    ];
    expect(planExports(wanted, applied)).to.deep.equal([]);
  });

  it("removes ours that are unwanted or wrong (other backing store, no ACL, a duplicate) and leaves other targets alone", () => {
    const { wanted } = wantedExports(observed("DEGRADED", [replica("v1"), replica("v2"), replica("v3")]));
    const plan = planExports(wanted, [
      target(1, replicaIqn("v1"), "/elsewhere"),
      target(2, replicaIqn("v2"), `/dev/zvol/${POOL}/v2`, []),
      target(3, replicaIqn("v3"), `/dev/zvol/${POOL}/v3`),
      target(4, replicaIqn("v3"), `/dev/zvol/${POOL}/v3`),
      target(5, replicaIqn("gone"), `/dev/zvol/${POOL}/gone`),
      target(6, "iqn.2026-11.org.example:other"),
    ]);
    expect(plan.map((a) => [a.kind, a.tid, a.iqn])).to.deep.equal([
      ["delete", 1, replicaIqn("v1")],
      ["delete", 2, replicaIqn("v2")],
      ["delete", 4, replicaIqn("v3")],
      ["delete", 5, replicaIqn("gone")],
      ["create", 1, replicaIqn("v1")],
      ["create", 2, replicaIqn("v2")],
    ]);
  });

  it("serves nothing of a pool that is not serving; skips replicas being destroyed or unfinished, and refuses a name too long for iSCSI", () => {
    for (const state of [undefined, "FAULTED", "UNAVAIL"])
      expect(wantedExports(observed(state, [replica("v1")])).wanted, String(state)).to.deep.equal([]);
    const long = "v".repeat(200);
    const result = wantedExports(
      observed("ONLINE", [
        replica("d", { destroying: true }),
        replica("u", { size: undefined }),
        replica(long),
        replica("ok"),
      ]),
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
    });
    expect(config).to.deep.include({
      cspi: "pool-a",
      pool: "cstor-pool-a",
      port: 9500,
      pollIntervalMs: 10_000,
      tgtadm: ["tgtadm", "-C", "0"],
    });
    expect(config.zfs.zpool).to.deep.equal(["nsenter", "-t", "1", "-m", "--", "zpool"]);
    const refused: [Record<string, string>, RegExp][] = [
      [{}, /^OPENEBS_IO_CSPI_NAME is not set: the pool Deployment sets it/],
      [
        { OPENEBS_IO_CSPI_NAME: "pool-a", OPENEBS_IO_ZPOOL_NAME: "other" },
        /OPENEBS_IO_ZPOOL_NAME="other" is not the pool of CStorPoolInstance pool-a \(cstor-pool-a\): unset it or set it to cstor-pool-a/,
      ],
      [
        { OPENEBS_IO_CSPI_NAME: "pool-a", PORT: "http" },
        /PORT="http" is not a port number \(1-65535\): set e.g. PORT=9500/,
      ],
      [
        { OPENEBS_IO_CSPI_NAME: "pool-a", TGT_CONTROL_PORT: "40000" },
        /TGT_CONTROL_PORT="40000" is not a port number \(0-32767\)/,
      ],
      [
        { OPENEBS_IO_CSPI_NAME: "pool-a", POLL_INTERVAL_SECONDS: "0" },
        /POLL_INTERVAL_SECONDS="0" is not a whole number of seconds/,
      ],
      [
        { OPENEBS_IO_CSPI_NAME: "pool-a", ZFS_COMMAND_PREFIX: "nsenter -t 1 -m --" },
        /ZFS_COMMAND_PREFIX must be a JSON array of strings/,
      ],
    ];
    for (const [env, message] of refused)
      expect(() => loadAgentConfig(env), JSON.stringify(env)).to.throw(message);
  });
});
