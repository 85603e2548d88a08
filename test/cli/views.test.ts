// The views of `cstor-pool get|describe|tree` on fixed objects (test/fixtures/cli/views/cluster.yaml, what kubectl
// get -o yaml prints): what a person reads, column by column, and the exit codes. The same subcommands against
// a real apiserver: test/integration/views.test.ts.
import { join } from "node:path";
import { expect } from "chai";
import type { CSPI } from "../../api/types.js";
import { processIO, readAll, type CliIO } from "../../cli/input.js";
import { runDescribe, runGet, runTree } from "../../cli/views-command.js";
import {
  capacityBar,
  clusterObjects,
  describePool,
  describeText,
  poolRows,
  table,
  usedRatio,
} from "../../cli/views.js";

const FIXTURE = join(new URL("../..", import.meta.url).pathname, "test/fixtures/cli/views/cluster.yaml");
const objects = () => clusterObjects("openebs", readAll(processIO, [FIXTURE]));

async function run(
  command: (argv: string[], io: CliIO) => Promise<number>,
  ...argv: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await command(argv, {
    ...processIO,
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
  });
  return { code, stdout, stderr };
}

describe("cstor-pool views: rendering", () => {
  it("draws used capacity as ten cells and a percentage; unknown as -", () => {
    expect(capacityBar(0)).to.equal("[----------]   0%");
    expect(capacityBar(0.333)).to.equal("[###-------]  33%");
    expect(capacityBar(1)).to.equal("[##########] 100%");
    expect(capacityBar(1.2), "over full (a stale total): the bar stays ten cells").to.equal(
      "[##########] 120%",
    );
    expect(capacityBar(undefined)).to.equal("-");
    expect(usedRatio("3Gi", "9Gi")).to.be.closeTo(1 / 3, 0.001);
    expect(usedRatio("1Gi", "0")).to.equal(undefined);
    expect(usedRatio(undefined, "9Gi")).to.equal(undefined);
  });

  it("aligns columns to the widest cell, two spaces apart, with no trailing spaces", () => {
    expect(
      table(
        ["A", "LONG"],
        [
          ["wider", "x"],
          ["y", ""],
        ],
      ),
    ).to.equal("A      LONG\nwider  x\ny\n");
  });

  it("leaves out objects of other namespaces", () => {
    expect(poolRows(objects()).map((r) => r.name)).to.deep.equal(["pools-a1b2c3", "pools-d4e5f6"]);
  });

  it("shows a device the node daemon has not reported as -, and a member the spec does not list apart", () => {
    const cluster = objects();
    const cspi = cluster.cspis.find((c) => c.metadata.name === "pools-d4e5f6") as CSPI;
    cspi.status!.devices = [
      {
        path: "/dev/sdz",
        section: "spares",
        state: "AVAIL",
        readErrors: 0,
        writeErrors: 0,
        checksumErrors: 0,
      },
      {
        blockDeviceName: "bd-n2-a",
        path: "/dev/disk/by-id/ata-disk-n2-a",
        section: "data",
        state: "ONLINE",
        readErrors: 1,
        writeErrors: 0,
        checksumErrors: 0,
      },
    ];
    const pool = describePool(cluster, "pools-d4e5f6")!;
    expect(pool.groups[0].devices.map((d) => [d.blockDeviceName, d.state, d.errors?.read])).to.deep.equal([
      ["bd-n2-a", "ONLINE", 1],
      ["bd-n2-b", "-", undefined],
    ]);
    expect(describeText(pool)).to.contain(
      "  not in the spec:\n    DEVICE  STATE  READ  WRITE  CKSUM  CLAIM  PATH  NOTE\n    -       AVAIL  0     0      0      -      -     spares: /dev/sdz\n",
    );
  });
});

describe("cstor-pool get, describe and tree on objects read from files", () => {
  it("get pools: node, health, capacity bar and replicas; -o wide adds the CSPC, space, devices, read-only, zpool, last report", async () => {
    const plain = await run(runGet, "pools", "-f", FIXTURE);
    expect([plain.code, plain.stderr]).to.deep.equal([0, ""]);
    expect(plain.stdout).to.equal(
      [
        "NAME          NODE    HEALTH    CAPACITY           REPLICAS",
        "pools-a1b2c3  node-1  ONLINE    [###-------]  33%  1/1",
        "pools-d4e5f6  node-2  DEGRADED  [########--]  78%  0/1",
        "",
      ].join("\n"),
    );
    const wide = await run(runGet, "pools", "-o", "wide", "-f", FIXTURE);
    expect(wide.stdout.split("\n")[2]).to.equal(
      "pools-d4e5f6  node-2  DEGRADED  [########--]  78%  0/1       pools  7Gi   9Gi    1/2      no        cstor-pools-d4e5f6  2026-11-21T10:00:00Z",
    );
  });

  it("get volumes: phase, the CStorVolume's health, Healthy replicas of those wanted, the fullest replica; wide: pools and nodes", async () => {
    const wide = await run(runGet, "volumes", "-o", "wide", "-f", FIXTURE);
    expect(wide.stdout).to.equal(
      [
        "NAME      CAPACITY  PHASE  HEALTH    REPLICAS  USED               CSPC   CONSISTENCY  POOLS                      NODES",
        "pvc-1111  4Gi       Bound  Degraded  1/2       [###-------]  25%  pools  2            pools-a1b2c3,pools-d4e5f6  node-1,node-2",
        "",
      ].join("\n"),
    );
  });

  it("get -o json prints the rows for programs", async () => {
    const json = await run(runGet, "pools", "-o", "json", "-f", FIXTURE);
    const rows = (
      JSON.parse(json.stdout) as {
        items: { name: string; devices: unknown; replicas: unknown; usedRatio: number }[];
      }
    ).items;
    expect(rows[1]).to.deep.include({
      name: "pools-d4e5f6",
      devices: { online: 1, total: 2 },
      replicas: { healthy: 0, total: 1 },
    });
    expect(rows[1].usedRatio).to.be.closeTo(7 / 9, 0.001);
  });

  it("describe pool: each device's state, errors and claim; conditions; the volume replicas there; the Events, oldest first", async () => {
    const { code, stdout } = await run(runDescribe, "pool", "pools-d4e5f6", "-f", FIXTURE);
    expect(code).to.equal(0);
    expect(stdout).to.contain("Phase:        DEGRADED (since 2026-11-21T09:40:00Z)\n");
    expect(stdout).to.contain("Capacity:     [########--]  78%  7Gi used of 9Gi, 2Gi free\n");
    expect(stdout).to.contain(
      [
        "Raid groups:",
        "  data mirror (raidGroups[0]):",
        "    DEVICE   STATE    READ  WRITE  CKSUM  CLAIM                PATH                           NOTE",
        "    bd-n2-a  ONLINE   0     0      2      bdc-bd-n2-a (Bound)  /dev/disk/by-id/ata-disk-n2-a",
        "    bd-n2-b  UNAVAIL  0     0      0      bdc-bd-n2-b (Bound)  /dev/disk/by-id/ata-disk-n2-b  was /dev/disk/by-id/ata-disk-n2-b",
        "",
      ].join("\n"),
    );
    expect(stdout).to.contain(
      "Volume replicas:\n  VOLUME    REPLICA                PHASE    USED  SIZE\n  pvc-1111  pvc-1111-pools-d4e5f6  Offline  1Gi   4Gi\n",
    );
    expect(stdout).to.match(
      /Events:\n {2}LAST SEEN .*\n {2}2026-11-21T09:39:50Z +Normal +PoolImported .*\n {2}2026-11-21T09:50:00Z +Warning +PoolDegraded +3 +cstor-node-daemon +pool cstor-pools-d4e5f6 is DEGRADED: bd-n2-b is UNAVAIL\n$/,
    );
    expect(stdout, "another pool's Event").to.not.contain("imported pool cstor-pools-a1b2c3");
  });

  it("describe of a pool that does not exist names those that do, exit 1", async () => {
    const { code, stdout, stderr } = await run(runDescribe, "pool", "pools-zzz", "-f", FIXTURE);
    expect([code, stdout]).to.deep.equal([1, ""]);
    expect(stderr).to.equal(
      'error: no CStorPoolInstance "pools-zzz" in namespace openebs; it has: pools-a1b2c3, pools-d4e5f6\n',
    );
    const elsewhere = await run(runDescribe, "pool", "pools-a1b2c3", "-n", "other", "-f", FIXTURE);
    expect([elsewhere.code, elsewhere.stderr]).to.deep.equal([
      1,
      'error: no CStorPoolInstance "pools-a1b2c3" in namespace other; it has: elsewhere-pool\n',
    ]);
  });

  it("tree: CSPC, its CSPIs, and under each the pool Deployment, claims and replicas", async () => {
    const { code, stdout } = await run(runTree, "-f", FIXTURE);
    expect(code).to.equal(0);
    expect(stdout).to.equal(
      [
        "CStorPoolCluster/pools  Degraded, 1/2 healthy",
        "├── CStorPoolInstance/pools-a1b2c3  node-1, ONLINE, [###-------]  33%",
        "│   ├── Deployment/pools-a1b2c3  1/1 available",
        "│   ├── BlockDeviceClaim/bdc-bd-n1-a  bd-n1-a, Bound",
        "│   ├── BlockDeviceClaim/bdc-bd-n1-b  bd-n1-b, Bound",
        "│   └── CStorVolumeReplica/pvc-1111-pools-a1b2c3  volume pvc-1111, Healthy",
        "└── CStorPoolInstance/pools-d4e5f6  node-2, DEGRADED, [########--]  78%",
        "    ├── Deployment/pools-d4e5f6  1/1 available",
        "    ├── BlockDeviceClaim/bdc-bd-n2-a  bd-n2-a, Bound",
        "    ├── BlockDeviceClaim/bdc-bd-n2-b  bd-n2-b, Bound",
        "    └── CStorVolumeReplica/pvc-1111-pools-d4e5f6  volume pvc-1111, Offline",
        "",
      ].join("\n"),
    );
    const missing = await run(runTree, "nope", "-f", FIXTURE);
    expect([missing.code, missing.stderr]).to.deep.equal([
      1,
      'error: no CStorPoolCluster "nope" in namespace openebs; it has: pools\n',
    ]);
  });

  it("an empty namespace: get says so on stderr, exit 0", async () => {
    const { code, stdout, stderr } = await run(runGet, "volumes", "-n", "empty", "-f", FIXTURE);
    expect([code, stdout, stderr]).to.deep.equal([
      0,
      "",
      "No CStorVolumeConfigs found in namespace empty.\n",
    ]);
  });

  it("usage errors: exit 2 with what to type", async () => {
    const what = await run(runGet, "pols", "-f", FIXTURE);
    expect([what.code, what.stderr.split("\n")[0]]).to.deep.equal([
      2,
      'error: cannot get "pols": use pools or volumes (did you mean pools?)',
    ]);
    const wide = await run(runDescribe, "pool", "x", "-o", "wide", "-f", FIXTURE);
    expect([wide.code, wide.stderr.split("\n")[0]]).to.deep.equal([
      2,
      "error: -o wide is not an output format here: use json, yaml",
    ]);
    const both = await run(runTree, "--kubeconfig", "k", "-f", FIXTURE);
    expect([both.code, both.stderr.split("\n")[0]]).to.deep.equal([
      2,
      "error: --kubeconfig and -f exclude each other: -f reads files, not the cluster",
    ]);
    const noName = await run(runDescribe, "pool");
    expect([noName.code, noName.stderr.split("\n")[0]]).to.deep.equal([
      2,
      "error: describe pool needs the CStorPoolInstance's name",
    ]);
    const unreadable = await run(runGet, "pools", "-f", "/nonexistent.yaml");
    expect([unreadable.code, unreadable.stderr]).to.deep.equal([
      2,
      "error: cannot read /nonexistent.yaml: ENOENT: no such file or directory, open '/nonexistent.yaml'\n",
    ]);
  });

  it("a kubeconfig that cannot be read: exit 2, naming the file", async () => {
    const { code, stderr } = await run(runGet, "pools", "--kubeconfig", "/nonexistent-kubeconfig");
    expect(code).to.equal(2);
    expect(stderr).to.match(/^error: cannot load the kubeconfig \/nonexistent-kubeconfig: /);
  });
});
