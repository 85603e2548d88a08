// Replica planner golden cases: test/fixtures/node-daemon/replicas/<case>/ holds the pool's state, the pool's
// `zfs get` output (read through the daemon's own parser) and the CVRs; plan.yaml pins the exact commands of
// the backend (zvol: what the DaemonSet ships and this machine cannot run) and each CVR's state; status.yaml
// is the status each CVR gets.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import type { CVR } from "../../api/types.js";
import { parseDatasetProperties, poolContents } from "../../zfs/parse.js";
import {
  exactQuantity,
  fileBackend,
  planReplicas,
  replicaBackendFromEnv,
  replicaStatus,
  zvolBackend,
  type ReplicaPlanInput,
} from "../../node-daemon/replicas.js";
import { expectGolden, goldenCases, type GoldenCase } from "../support/golden.js";

interface ReplicaFixture {
  pool: string;
  backend: "zvol" | "file";
  /** file backend: CSTOR_REPLICA_FILE_DIR. */
  fileDir?: string;
  /** Absent: the pool is not imported on this node. */
  imported?: { health: string; readonly: boolean; zfsGet: string };
  cvrs: CVR[];
}

function inputOf(goldenCase: GoldenCase): ReplicaPlanInput {
  const fixture = goldenCase.read("input.yaml") as ReplicaFixture;
  const backend =
    fixture.backend === "file" ? fileBackend(fixture.fileDir ?? "/var/openebs/replicas") : zvolBackend();
  const input: ReplicaPlanInput = { pool: fixture.pool, cvrs: fixture.cvrs, backend };
  if (fixture.imported) {
    const { zfsGet, ...state } = fixture.imported;
    const records = parseDatasetProperties(readFileSync(join(goldenCase.dir, zfsGet), "utf8"));
    input.imported = { ...state, ...poolContents(fixture.pool, records) };
  }
  return input;
}

describe("node-daemon replica planner (golden)", () => {
  for (const goldenCase of goldenCases("node-daemon/replicas")) {
    it(`${goldenCase.name}: ${goldenCase.description}`, () => {
      const plan = planReplicas(inputOf(goldenCase));
      expectGolden(goldenCase, "plan.yaml", plan);
      expect(planReplicas(inputOf(goldenCase)), "pure: the same input gives the same plan").to.deep.equal(
        plan,
      );
      const cvrs = inputOf(goldenCase).cvrs;
      const statuses = Object.fromEntries(
        cvrs.map((cvr) => [
          cvr.metadata.name,
          replicaStatus(cvr, plan.states[cvr.metadata.name ?? ""], goldenCase.now),
        ]),
      );
      expectGolden(goldenCase, "status.yaml", statuses);
    });
  }

  it("keeps lastTransitionTime while the phase and reason stay; moves it when they change", () => {
    const cvr = {
      apiVersion: "openebs.io/v1alpha1",
      kind: "CStorVolumeReplica",
      metadata: { name: "v-p", generation: 2 },
      spec: { capacity: "1Gi", replicaId: "r" },
    } as CVR;
    const first = replicaStatus(
      cvr,
      { phase: "Healthy", capacity: { total: 2 ** 30, used: 4096 } },
      new Date("2026-03-01T12:00:00Z"),
    );
    const same = replicaStatus(
      { ...cvr, status: first },
      { phase: "Healthy", capacity: { total: 2 ** 30, used: 8192 } },
      new Date("2026-03-01T12:00:30Z"),
    );
    expect(same).to.include({
      lastTransitionTime: "2026-03-01T12:00:00Z",
      lastUpdateTime: "2026-03-01T12:00:30Z",
      observedGeneration: 2,
    });
    expect(same.capacity).to.deep.equal({ total: "1Gi", used: "8Ki" });
    const offline = replicaStatus(
      { ...cvr, status: same },
      { phase: "Offline", reason: "PoolNotImported" },
      new Date("2026-03-01T12:01:00Z"),
    );
    expect(offline).to.include({ lastTransitionTime: "2026-03-01T12:01:00Z" });
  });

  it("writes capacities as exact quantities", () => {
    expect([0, 4096, 10_002_432, 20 * 2 ** 20, 2 ** 40, 1000].map(exactQuantity)).to.deep.equal([
      "0",
      "4Ki",
      "9768Ki",
      "20Mi",
      "1Ti",
      "1000",
    ]);
  });

  it("chooses the backend from CSTOR_REPLICA_BACKEND: zvol by default, file when asked, anything else a clear error", () => {
    expect(replicaBackendFromEnv({}).name).to.equal("zvol");
    expect(replicaBackendFromEnv({ CSTOR_REPLICA_BACKEND: "zvol" }).name).to.equal("zvol");
    expect(
      replicaBackendFromEnv({ CSTOR_REPLICA_BACKEND: "file", CSTOR_REPLICA_FILE_DIR: "/srv/replicas" }).name,
    ).to.equal("file");
    expect(() => replicaBackendFromEnv({ CSTOR_REPLICA_BACKEND: "zvols" })).to.throw(
      /CSTOR_REPLICA_BACKEND must be one of zvol, file .*got "zvols"/,
    );
    expect(() => replicaBackendFromEnv({ CSTOR_REPLICA_BACKEND: "" })).to.throw(
      /CSTOR_REPLICA_BACKEND must be one of/,
    );
    expect(() =>
      replicaBackendFromEnv({ CSTOR_REPLICA_BACKEND: "file", CSTOR_REPLICA_FILE_DIR: "../replicas" }),
    ).to.throw(/CSTOR_REPLICA_FILE_DIR must be an absolute/);
  });
});
