// The default install's ValidatingAdmissionPolicy (metacontroller/base/cspc-policy.yaml) on a real kube-apiserver,
// without the webhook: a day-2 edit that cspc-sync would refuse is an apply-time error with day2.ts's words, a
// legal one is accepted, and a CSPC whose pools hold volumes cannot be deleted.
import { expect } from "chai";
import { ANNOTATION, API_VERSION, KIND, LABEL, TYPE_KEY } from "../../api/constants.js";
import type { BlockPoolSpec, CSPC, CSPI } from "../../api/types.js";
import { buildInventory } from "../../lib/inventory.js";
import { diffPool } from "../../lib/cspc/day2-diff.js";
import {
  INSTALL_NAMESPACE as NS,
  projectInstalled,
  waitUntil,
  type KubeCluster,
} from "../../testkit/kube.js";

const NAME = "policy-day2";
const bds = (...names: string[]) => names.map((blockDeviceName) => ({ blockDeviceName }));
const node = (host: string) => ({ "kubernetes.io/hostname": host });

/** Pool 0: two 3-way mirrors, a mirrored write cache, a spare and a read cache. Pool 1: a stripe. */
const STORED: BlockPoolSpec[] = [
  {
    nodeSelector: node("node-1"),
    raidGroups: [
      { type: "mirror", blockDevices: bds("a1", "a2", "a3") },
      { type: "mirror", blockDevices: bds("a4", "a5", "a6") },
      { type: "mirror", isWriteCache: true, blockDevices: bds("w1", "w2") },
      { isSpare: true, blockDevices: bds("s1", "s2") },
      { isReadCache: true, blockDevices: bds("r1", "r2") },
    ],
  },
  { nodeSelector: node("node-2"), raidGroups: [{ type: "stripe", blockDevices: bds("b1", "b2") }] },
];
/** What each pool holds (its CSPI): pool 1's b3 is listed in the stored spec but not yet in the pool. */
const HELD: BlockPoolSpec[] = [
  STORED[0],
  { nodeSelector: node("node-2"), raidGroups: [{ type: "stripe", blockDevices: bds("b1", "b2") }] },
];
const STORED_SPEC: BlockPoolSpec[] = [
  STORED[0],
  { ...STORED[1], raidGroups: [{ type: "stripe", blockDevices: bds("b1", "b2", "b3") }] },
];
const CSPI_NAMES = ["policy-day2-pool-1", "policy-day2-pool-2"];

function cspc(pools: BlockPoolSpec[]): CSPC {
  return {
    apiVersion: API_VERSION,
    kind: KIND.cspc,
    metadata: { name: NAME, namespace: NS },
    spec: { pools },
  };
}

function cspi(index: number, volumes = 0): CSPI {
  const pool = HELD[index];
  const host = pool.nodeSelector["kubernetes.io/hostname"];
  return {
    apiVersion: API_VERSION,
    kind: KIND.cspi,
    metadata: { name: CSPI_NAMES[index], namespace: NS, labels: { [LABEL.cspc]: NAME } },
    spec: {
      hostName: host,
      nodeSelector: pool.nodeSelector,
      poolConfig: { compression: "off", roThresholdLimit: 85 },
      raidGroups: structuredClone(pool.raidGroups).map((g) => ({ ...g, type: g.type ?? "stripe" })),
    },
    ...(volumes ? { status: { provisionedReplicas: volumes } } : {}),
  };
}

/** What lib/cspc/day2-diff.ts says about pool `index` of `pools` against what its CSPI (`held`'s) holds. */
function day2Violations(pools: BlockPoolSpec[], index: number, heldIndex = index) {
  const held = CSPI_NAMES.map((_, i) => cspi(i));
  const children = { [TYPE_KEY.cspi]: Object.fromEntries(held.map((c) => [`${NS}/${c.metadata.name}`, c])) };
  const inventory = buildInventory(cspc(pools), children, {});
  return diffPool({ pool: pools[index], poolIndex: index, observed: held[heldIndex], inventory }).violations;
}

const edit = (change: (pools: BlockPoolSpec[]) => void): BlockPoolSpec[] => {
  const pools = structuredClone(STORED_SPEC);
  change(pools);
  return pools;
};
const group = (pools: BlockPoolSpec[], p: number, g: number) => pools[p].raidGroups[g];

interface RefusedCase {
  name: string;
  pools: BlockPoolSpec[];
  pool: number;
  reason: string;
}

const REFUSED: RefusedCase[] = [
  {
    name: "a device removed from a stripe group",
    pool: 1,
    reason: "BlockDeviceRemoved",
    pools: edit((p) => (group(p, 1, 0).blockDevices = bds("b1"))),
  },
  {
    name: "a device removed from each mirror group",
    pool: 0,
    reason: "BlockDeviceRemoved",
    pools: edit(
      (p) => (
        (group(p, 0, 0).blockDevices = bds("a1", "a2")),
        (group(p, 0, 1).blockDevices = bds("a4", "a5"))
      ),
    ),
  },
  {
    name: "a raid group removed",
    pool: 0,
    reason: "RaidGroupRemoved",
    pools: edit((p) => p[0].raidGroups.splice(1, 1)),
  },
  {
    name: "a group's type changed",
    pool: 1,
    reason: "RaidGroupTypeChanged",
    pools: edit((p) => (group(p, 1, 0).type = "mirror")),
  },
  {
    name: "a group's role changed",
    pool: 0,
    reason: "RaidGroupRoleChanged",
    pools: edit((p) => (group(p, 0, 1).isWriteCache = true)),
  },
  {
    // Both data groups widen, so the pool's redundancy stays uniform and only the day-2 rule is broken.
    name: "a device added to each mirror data group",
    pool: 0,
    reason: "BlockDeviceAddedToRedundantGroup",
    pools: edit(
      (p) => (group(p, 0, 0).blockDevices.push(...bds("a7")), group(p, 0, 1).blockDevices.push(...bds("a8"))),
    ),
  },
  {
    name: "two devices replaced in one group",
    pool: 0,
    reason: "MultipleReplacements",
    pools: edit((p) => (group(p, 0, 1).blockDevices = bds("a4", "a7", "a8"))),
  },
];

async function apply(cluster: KubeCluster, pools: BlockPoolSpec[], dryRun: boolean) {
  return cluster.kubectl(
    ["apply", "--server-side", "--force-conflicts", ...(dryRun ? ["--dry-run=server"] : []), "-f", "-"],
    {
      input: JSON.stringify(cspc(pools)),
      allowFailure: true,
    },
  );
}

describe("integration: the CSPC admission policy of the default install (no webhook)", function () {
  this.timeout(10 * 60_000);
  let cluster: KubeCluster;

  /** What the node daemon reports: `null` removes the count (a pool whose daemon has not reported it). */
  const setVolumes = async (pool: number, provisionedReplicas: number | null) => {
    const path = `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances/${CSPI_NAMES[pool]}/status`;
    const patched = await cluster.request(
      cluster.admin,
      "PATCH",
      path,
      { status: { provisionedReplicas } },
      "application/merge-patch+json",
    );
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
  };

  before(async () => {
    cluster = await projectInstalled();
    const created = await apply(cluster, STORED_SPEC, false);
    expect(created.exitCode, created.stderr).to.equal(0);
    for (const i of [0, 1])
      await cluster.kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(cspi(i)) });
    // Both node daemons reported their pools empty (an unreported count holds a pool: tested below).
    for (const i of [0, 1]) await setVolumes(i, 0);
    // The apiserver enforces a new policy, and sees new params, a moment after they are created.
    await waitUntil(
      async () => (await apply(cluster, REFUSED[0].pools, true)).exitCode !== 0,
      30_000,
      () => "the CSPC policy is never enforced",
    );
  });

  after(async () => {
    await cluster.kubectl(["delete", "cspi", ...CSPI_NAMES, "-n", NS, "--ignore-not-found"]);
    await cluster.kubectl(["delete", "cspc", NAME, "-n", NS, "--ignore-not-found"]);
  });

  for (const c of REFUSED) {
    it(`refuses ${c.name}, in day2-diff.ts's words (${c.reason})`, async () => {
      const violations = day2Violations(c.pools, c.pool);
      expect(
        violations.map((v) => v.reason),
        "cspc-sync refuses it too",
      ).to.include(c.reason);
      const expected = violations.map((v) => v.message);
      const result = await apply(cluster, c.pools, false);
      expect(result.exitCode, result.stdout).to.equal(1);
      expect(result.stderr).to.contain("ValidatingAdmissionPolicy 'cstor-pool-cluster-safety'");
      for (const message of expected) expect(result.stderr).to.contain(message);
      const stored = JSON.parse(
        (await cluster.kubectl(["get", "cspc", NAME, "-n", NS, "-o", "json"])).stdout,
      );
      expect(stored.spec.pools, "nothing changed").to.deep.equal(STORED_SPEC);
    });
  }

  const LEGAL: [string, BlockPoolSpec[]][] = [
    ["a stripe expanded", edit((p) => group(p, 1, 0).blockDevices.push(...bds("b4")))],
    [
      "a new raid group",
      edit((p) => p[0].raidGroups.push({ type: "mirror", blockDevices: bds("a7", "a8", "a9") })),
    ],
    [
      "one replacement in each redundant group",
      edit((p) => {
        group(p, 0, 0).blockDevices = bds("a7", "a2", "a3");
        group(p, 0, 1).blockDevices = bds("a4", "a8", "a6");
        group(p, 0, 2).blockDevices = bds("w1", "w3");
      }),
    ],
    ["a migration (same devices, another node)", edit((p) => (p[1].nodeSelector = node("node-3")))],
    ["a whole pool removed", edit((p) => p.splice(1, 1))],
    ["poolConfig edits", edit((p) => (p[0].poolConfig = { compression: "lz4", roThresholdLimit: 90 }))],
    [
      "an expansion the pool does not hold yet taken back (b3)",
      edit((p) => (group(p, 1, 0).blockDevices = bds("b1", "b2"))),
    ],
    [
      "a spare and a read cache device added",
      edit(
        (p) => (
          group(p, 0, 3).blockDevices.push(...bds("s3")),
          group(p, 0, 4).blockDevices.push(...bds("r3"))
        ),
      ),
    ],
    // Spares and read caches hold no data: the node daemon removes them from the pool (docs/adr/0026-spare-and-read-cache-devices-may-leave-a-live.md).
    ["a spare device removed", edit((p) => (group(p, 0, 3).blockDevices = bds("s1")))],
    ["the read cache group removed", edit((p) => p[0].raidGroups.splice(4, 1))],
    ["a spare swapped for another", edit((p) => (group(p, 0, 3).blockDevices = bds("s1", "s3")))],
  ];
  for (const [name, pools] of LEGAL) {
    it(`accepts ${name}`, async () => {
      const result = await apply(cluster, pools, true);
      expect(result.exitCode, result.stderr).to.equal(0);
      // cspc-sync and the webhook agree (lib/cspc/day2-diff.ts): what the policy lets through for pool 0's spares
      // and read caches is carried out, not refused later.
      if (/spare|read cache/.test(name)) expect(day2Violations(pools, 0)).to.deep.equal([]);
    });
  }

  it("never judges an edit that leaves the spec as it is (labels, finalizers), even when the stored spec is refused", async () => {
    // Pool 1 now holds b9, which the stored spec does not list: every spec edit of pool 1 is refused...
    const held = cspi(1);
    held.spec.raidGroups[0].blockDevices.push({ blockDeviceName: "b9" });
    await cluster.kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], {
      input: JSON.stringify(held),
    });
    const grown = edit((p) => group(p, 1, 0).blockDevices.push(...bds("b4")));
    await waitUntil(
      async () => (await apply(cluster, grown, true)).exitCode !== 0,
      30_000,
      () => "the policy never sees b9",
    );
    // ...but a label or a finalizer is not a spec edit.
    const labelled = await cluster.kubectl(["label", "cspc", NAME, "-n", NS, "checked=yes"], {
      allowFailure: true,
    });
    expect(labelled.exitCode, labelled.stderr).to.equal(0);
    const finalizer = await cluster.kubectl(
      [
        "patch",
        "cspc",
        NAME,
        "-n",
        NS,
        "--type=merge",
        "-p",
        JSON.stringify({ metadata: { finalizers: ["example.com/keep"] } }),
      ],
      { allowFailure: true },
    );
    expect(finalizer.exitCode, finalizer.stderr).to.equal(0);
    await cluster.kubectl([
      "patch",
      "cspc",
      NAME,
      "-n",
      NS,
      "--type=merge",
      "-p",
      JSON.stringify({ metadata: { finalizers: null } }),
    ]);
    await cluster.kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], {
      input: JSON.stringify(cspi(1)),
    });
  });

  it("lets removing a pool whose replica count is known through: cspc-sync and the webhook judge its replicas (decision 27 moves those CVRs name)", async () => {
    await setVolumes(1, 1);
    const withoutPool = edit((p) => p.splice(1, 1));
    await waitUntil(
      async () => (await apply(cluster, withoutPool, true)).exitCode === 0,
      30_000,
      () => "the policy refuses a removal whose count is known",
    );
    await setVolumes(1, 0);
  });

  it("refuses removing a pool, and deleting the CSPC, while the pool's replica count is unknown, in the webhook's words", async () => {
    await setVolumes(1, null);
    const withoutPool = edit((p) => p.splice(1, 1));
    await waitUntil(
      async () => (await apply(cluster, withoutPool, true)).exitCode !== 0,
      30_000,
      () => "the policy never sees the unknown count",
    );
    const fix =
      `bring the node daemon on node-2 back so it reports the count; if the node is gone for good and no volume was ever on the pool, record that by hand: ` +
      `kubectl patch cspi ${CSPI_NAMES[1]} -n ${NS} --subresource=status --type=merge -p '{"status":{"provisionedReplicas":0}}'`;
    const refused = await apply(cluster, withoutPool, false);
    expect(refused.stderr).to.contain(
      `spec.pools no longer lists pool ${CSPI_NAMES[1]} (node node-2), which may hold volumes: the replica count is unknown (the node daemon has not reported it): ` +
        `removing it would destroy them; put its pool spec back, or ${fix}`,
    );
    const deleted = await cluster.kubectl(["delete", "cspc", NAME, "-n", NS, "--dry-run=server"], {
      allowFailure: true,
    });
    expect(deleted.exitCode).to.equal(1);
    expect(deleted.stderr).to.contain(
      `cannot be deleted while its pools hold volumes: pool ${CSPI_NAMES[1]} on node node-2 may hold volumes: the replica count is unknown (the node daemon has not reported it) (${fix})`,
    );
    await setVolumes(1, 0);
    await waitUntil(
      async () => (await apply(cluster, withoutPool, true)).exitCode === 0,
      30_000,
      () => "the policy still refuses the removal",
    );
  });

  /** The CSPIs with these pool-index hints (undefined: none), once the policy's params have them. */
  const hint = async (hints: (string | undefined)[]) => {
    for (const [i, value] of hints.entries()) {
      const object = cspi(i);
      if (value !== undefined) object.metadata.annotations = { [ANNOTATION.poolIndex]: value };
      await cluster.kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], {
        input: JSON.stringify(object),
      });
    }
    // The params reach the policy through one watch, in order: once a later change of pool 1's count is seen,
    // so are the hints.
    const withoutPool = edit((p) => p.splice(1, 1));
    await setVolumes(1, null);
    await waitUntil(
      async () => (await apply(cluster, withoutPool, true)).exitCode !== 0,
      30_000,
      () => "the policy never sees the unknown count",
    );
    await setVolumes(1, 0);
    await waitUntil(
      async () => (await apply(cluster, withoutPool, true)).exitCode === 0,
      30_000,
      () => "the policy still sees the unknown count",
    );
  };

  const expectRefused = async (pools: BlockPoolSpec[], index: number, heldIndex: number) => {
    const expected = day2Violations(pools, index, heldIndex).map((v) => v.message);
    expect(expected.length, "cspc-sync refuses it too").to.be.greaterThan(0);
    const result = await apply(cluster, pools, true);
    expect(result.exitCode, result.stdout).to.equal(1);
    for (const message of expected) expect(result.stderr).to.contain(message);
  };

  const HINTS: [string, (string | undefined)[]][] = [
    ["right", ["0", "1"]],
    ["swapped (each names the other CSPI's pool)", ["1", "0"]],
    ["past the end of spec.pools", ["5", "900000"]],
    ["unreadable", ["x", "-1"]],
  ];
  for (const [name, hints] of HINTS) {
    it(`judges every edit as without a hint when the CSPIs' recorded pool indexes are ${name}`, async () => {
      await hint(hints);
      for (const c of REFUSED) await expectRefused(c.pools, c.pool, c.pool);
      for (const [legal, pools] of LEGAL.slice(0, 5)) {
        const result = await apply(cluster, pools, true);
        expect(result.exitCode, `${legal}: ${result.stderr}`).to.equal(0);
      }
    });
  }

  it("finds a pool whose index the edit moved (one or two places, either way), with the right hints recorded", async () => {
    await hint(["0", "1"]);
    const pool = (host: string, device: string): BlockPoolSpec => ({
      nodeSelector: node(host),
      raidGroups: [{ type: "stripe", blockDevices: bds(device) }],
    });
    const narrowed = (p: BlockPoolSpec[]) => (group(p, 1, 0).blockDevices = bds("b1"));
    // Pool 1 (hint 1) at index 2, 3 and 0; pool 0 (hint 0) at index 1 when the two swap.
    const moved: [BlockPoolSpec[], number, number][] = [
      [edit((p) => (narrowed(p), p.splice(1, 0, pool("node-5", "n5")))), 2, 1],
      [edit((p) => (narrowed(p), p.splice(1, 0, pool("node-5", "n5"), pool("node-6", "n6")))), 3, 1],
      [edit((p) => (narrowed(p), p.reverse())), 0, 1],
      [edit((p) => (p.reverse(), p[1].raidGroups.splice(1, 1))), 1, 0],
    ];
    for (const [pools, index, heldIndex] of moved) await expectRefused(pools, index, heldIndex);
    const accepted = await apply(
      cluster,
      edit((p) => (group(p, 1, 0).blockDevices.push(...bds("b4")), p.unshift(pool("node-5", "n5")))),
      true,
    );
    expect(accepted.exitCode, accepted.stderr).to.equal(0);
    await hint([undefined, undefined]);
  });

  it("judges a spec edit by metadata.generation, which the apiserver moved on before the policy ran", async () => {
    const stored = JSON.parse((await cluster.kubectl(["get", "cspc", NAME, "-n", NS, "-o", "json"])).stdout);
    const grown = cspc(edit((p) => group(p, 1, 0).blockDevices.push(...bds("b4"))));
    const result = await cluster.kubectl(
      ["apply", "--server-side", "--force-conflicts", "--dry-run=server", "-o", "json", "-f", "-"],
      { input: JSON.stringify(grown) },
    );
    expect(JSON.parse(result.stdout).metadata.generation).to.equal(stored.metadata.generation + 1);
    // The refusals above pass only through the match condition, which compares generations.
    await expectRefused(REFUSED[0].pools, REFUSED[0].pool, REFUSED[0].pool);
  });

  it("refuses deleting the CSPC while a pool holds volumes, with the fix; allows it once none does", async () => {
    await setVolumes(1, 2);
    await waitUntil(
      async () =>
        (
          await cluster.kubectl(["delete", "cspc", NAME, "-n", NS, "--dry-run=server"], {
            allowFailure: true,
          })
        ).exitCode !== 0,
      30_000,
      () => "the policy never sees the volumes",
    );
    const refused = await cluster.kubectl(["delete", "cspc", NAME, "-n", NS], { allowFailure: true });
    expect(refused.stderr).to.contain(
      `CStorPoolCluster ${NS}/${NAME} cannot be deleted while its pools hold volumes: pool ${CSPI_NAMES[1]} on node node-2 holds 2 volume replicas (as its node daemon reports). ` +
        "Deleting it would destroy those pools and every volume on them: move or delete those volumes first, then delete the CStorPoolCluster",
    );
    expect((await cluster.kubectl(["get", "cspc", NAME, "-n", NS])).exitCode).to.equal(0);

    await setVolumes(1, 0);
    await waitUntil(
      async () =>
        (
          await cluster.kubectl(["delete", "cspc", NAME, "-n", NS, "--dry-run=server"], {
            allowFailure: true,
          })
        ).exitCode === 0,
      30_000,
      () => "the policy still refuses the deletion",
    );
  });
});
