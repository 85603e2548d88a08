// The CSPC admission policy's cost on a real kube-apiserver grows with the CSPC edited, not with its square
// (issue 33, docs/adr/0046-the-cspc-policy-finds-a-cspis-pool-by-a-recorded-index.md). The apiserver evaluates
// the policy once per CSPI of the CSPC, and each evaluation used to look through every pool spec for its own
// (and compare the whole old and new spec in the match condition): 22 s an edit at 1,000 pools. The shared
// fleet (testkit/fleet.ts) at 40 pools, then grown to 400: the apiserver's own time in the policy for the same
// kind of edit may grow at most 2.5 times as fast as the CSPC (about 70 times before the change, about 10 after).
import { expect } from "chai";
import { API_VERSION, LABEL } from "../../api/constants.js";
import type { BlockPoolSpec, KubeObject } from "../../api/types.js";
import { createCspis, fleetObjects } from "../../testkit/fleet.js";
import {
  INSTALL_NAMESPACE as NS,
  projectInstalled,
  waitUntil,
  type KubeCluster,
} from "../../testkit/kube.js";

const NAME = "policy-cost";
const SMALL = 40;
const LARGE = 400;
/** Growth allowed beyond proportional: the measurement's noise on a shared machine, far below quadratic's 10. */
const SLACK = 2.5;
const CSPCS = `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters`;
const SAMPLES = 3;

type Pools = BlockPoolSpec[];
const bds = (...names: string[]) => names.map((blockDeviceName) => ({ blockDeviceName }));

/** The apiserver's time so far in the ValidatingAdmissionPolicy plugin on UPDATEs, in seconds (its metric). */
async function secondsInPolicy(cluster: KubeCluster): Promise<number> {
  const metrics = String((await cluster.request(cluster.admin, "GET", "/metrics")).body);
  const prefix =
    'apiserver_admission_controller_admission_duration_seconds_sum{name="ValidatingAdmissionPolicy",operation="UPDATE"';
  return metrics
    .split("\n")
    .filter((line) => line.startsWith(prefix))
    .reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);
}

/** The stored CSPC with `change` made to its pools, sent as a dry-run update: its HTTP status. */
async function dryRunUpdate(cluster: KubeCluster, change: (pools: Pools) => void): Promise<number> {
  const stored = (await cluster.request(cluster.admin, "GET", `${CSPCS}/${NAME}`)).body as KubeObject & {
    spec: { pools: Pools };
  };
  change(stored.spec.pools);
  return (await cluster.request(cluster.admin, "PUT", `${CSPCS}/${NAME}?dryRun=All`, stored)).status;
}

const middle = (pools: Pools) => pools[Math.floor(pools.length / 2)];
/** A new mirror group in the middle pool: legal, so every CSPI is judged to the end. */
const addGroup = (pools: Pools) =>
  middle(pools).raidGroups.push({ type: "mirror", blockDevices: bds("cost-new-0", "cost-new-1") });
/** A device added to each mirror of the last pool, whose CSPI was created last: refused once the policy has it. */
const widenLast = (pools: Pools) =>
  pools.at(-1)!.raidGroups.forEach((g, i) => g.blockDevices.push(...bds(`cost-wide-${i}`)));

describe("integration: the CSPC admission policy's cost grows with the CSPC, not its square", function () {
  this.timeout(10 * 60_000);
  let cluster: KubeCluster;

  /** The fleet at `pools` pools (the CSPIs the smaller one has stay), once the policy has every CSPI. */
  const grow = async (pools: number, before: number) => {
    const { cspc, cspis } = fleetObjects(pools, NAME);
    const current = await cluster.request(cluster.admin, "GET", `${CSPCS}/${NAME}`);
    const put =
      current.status === 404
        ? await cluster.request(cluster.admin, "POST", CSPCS, cspc)
        : await cluster.request(cluster.admin, "PUT", `${CSPCS}/${NAME}`, {
            ...cspc,
            metadata: { ...cspc.metadata, resourceVersion: current.body.metadata.resourceVersion },
          });
    expect(put.status, JSON.stringify(put.body)).to.be.oneOf([200, 201]);
    await createCspis(cluster, cspis.slice(before), 0);
    await waitUntil(
      async () => (await dryRunUpdate(cluster, widenLast)) === 422,
      120_000,
      () => `the policy never refuses widening the mirrors of pool ${pools - 1}`,
    );
  };

  /** The fastest of a few runs of the legal edit: the apiserver's ms in the policy. */
  const msInPolicy = async () => {
    const runs: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const before = await secondsInPolicy(cluster);
      expect(await dryRunUpdate(cluster, addGroup), "the legal edit is accepted").to.equal(200);
      runs.push((await secondsInPolicy(cluster)) - before);
    }
    return Math.min(...runs) * 1000;
  };

  before(async () => {
    cluster = await projectInstalled();
  });

  after(async () => {
    // One request for all of them (kubectl deletes one by one).
    const selector = encodeURIComponent(`${LABEL.cspc}=${NAME}`);
    await cluster.request(
      cluster.admin,
      "DELETE",
      `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances?labelSelector=${selector}`,
    );
    await cluster.kubectl(["delete", "cspc", NAME, "-n", NS, "--ignore-not-found"]);
  });

  it(`an edit of ${LARGE} pools costs the policy at most ${SLACK} x ${LARGE / SMALL} times one of ${SMALL}`, async () => {
    await grow(SMALL, 0);
    const small = await msInPolicy();
    await grow(LARGE, SMALL);
    const large = await msInPolicy();
    expect(
      large / small,
      `${large.toFixed(0)} ms at ${LARGE} pools, ${small.toFixed(1)} ms at ${SMALL}`,
    ).to.be.below((SLACK * LARGE) / SMALL);
  });
});
