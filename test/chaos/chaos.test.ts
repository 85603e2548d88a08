// The small version of `npm run chaos` inside `npm test` (docs/reliability.md#chaos-runs-npm-run-chaos): one
// seeded run of the whole lifecycle (pools, a volume on them, their deletion) under seven fault kinds, on a
// kube-apiserver of their own with three simulated nodes. A run fails on any broken invariant (data read back,
// claims and replicas released only when safe, no device in two pools, nothing left or forced) or a step that
// does not converge within the bound; its log lines then come with the failure, and the seed replays it with
// `npm run chaos -- --runs 1 --seed N`.
import { expect } from "chai";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { installProject, ownCluster, type OwnCluster } from "../../testkit/kube.js";
import { requireZfs } from "../../testkit/zfs.js";
import { DEFAULT_FAULTS } from "./faults.js";
import { chaosRun, DEFAULT_BOUND_MS } from "./lifecycle.js";
import { summaryLine } from "./summary.js";

/**
 * Fixed, so that a failure in CI names a seed anyone can replay; `npm run chaos` tries others. One run, as CI's time
 * allows: seed 10's schedule injects 16 or 17 faults of seven kinds in every run seen (Metacontroller restarted
 * five or six times, the only test that does); the eighth, a daemon SIGKILLed, is injected at chosen moments by
 * test/reliability/node-daemon-faults.test.ts.
 */
const SEEDS = [10];

describe("chaos: the lifecycle under a seeded fault schedule (one run of npm run chaos)", function () {
  // A run takes 1 to 2 minutes on a quiet 2-core machine; a step may take up to its bound under faults.
  this.timeout(20 * 60_000);
  let cluster: OwnCluster;

  before(async () => {
    requireZfs();
    cluster = await ownCluster();
    await installProject(cluster);
  });
  after(async () => {
    await cluster?.stop();
  });

  for (const seed of SEEDS) {
    it(`seed ${seed}: every step converges, every checksum reads back, no claim or replica released early, nothing left`, async () => {
      const lines: string[] = [];
      const report = await chaosRun(cluster, {
        seed,
        boundMs: DEFAULT_BOUND_MS,
        faults: DEFAULT_FAULTS,
        logDir: join(tmpdir(), `cstor-chaos-test-${process.pid}`),
        say: (line) => lines.push(line),
      });
      const outcome = summaryLine(report);
      expect(report.failure, `${outcome}\n${lines.slice(-80).join("\n")}`).to.equal(undefined);
      expect(report.passed, outcome).to.equal(true);
      expect(report.faultsInjected, `${outcome}: a run without faults proves nothing`).to.be.above(0);
      expect(Object.keys(report.convergence)).to.have.length(10);
      expect(report.checksumsVerified).to.be.above(0);
      expect(report.releasesChecked).to.be.above(0);
      expect(
        report.replicaReleasesChecked,
        `${outcome}: the evacuation off the removed pool releases a replica`,
      ).to.be.above(0);
      process.stdout.write(`      ${outcome}\n`);
    });
  }
});
