// The CRDs as users meet them through kubectl: the CEL rules refuse invalid CSPCs and volume edits with their
// messages (no webhook needed), and `kubectl get cspc|cspi|cvc|cv|cvr` print the promised columns.
import { expect } from "chai";
import { API_VERSION, KIND } from "../../api/constants.js";
import type { CSPCSpec, PoolSpec } from "../../api/types.js";
import { checkCspcSpec } from "../../lib/rules/pool-spec.js";
import { INSTALL_NAMESPACE, projectInstalled, type KubeCluster } from "../../testkit/kube.js";

const devices = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => ({ blockDeviceName: `${prefix}-bd-${i + 1}` }));

function pool(raidGroups: PoolSpec["raidGroups"], poolConfig?: PoolSpec["poolConfig"]): PoolSpec {
  return {
    nodeSelector: { "kubernetes.io/hostname": "node-1" },
    raidGroups,
    ...(poolConfig ? { poolConfig } : {}),
  };
}

function cspc(name: string, spec: CSPCSpec): object {
  return { apiVersion: API_VERSION, kind: KIND.cspc, metadata: { name, namespace: INSTALL_NAMESPACE }, spec };
}

interface InvalidCase {
  name: string;
  spec: CSPCSpec;
  /** What the apiserver says: the field path and the rule's message (or the list-map key it found twice). */
  says: string[];
  /** The same mistake as the TypeScript rules (webhook, cspc-sync, CLI) name it. */
  reason: string;
}

const INVALID: InvalidCase[] = [
  {
    name: "mirror with 1 device",
    spec: { pools: [pool([{ type: "mirror", blockDevices: devices("m", 1) }])] },
    says: ["spec.pools[0].raidGroups[0]: ", "a mirror raid group needs at least 2 block devices, it has 1"],
    reason: "InvalidDeviceCount",
  },
  {
    name: "raidz with 4 devices",
    spec: { pools: [pool([{ type: "raidz", blockDevices: devices("z", 4) }])] },
    says: [
      "spec.pools[0].raidGroups[0]: ",
      "a raidz raid group needs 3, 5, 9, 17 or 33 block devices (2^n+1), it has 4",
    ],
    reason: "InvalidDeviceCount",
  },
  {
    name: "raidz2 with 5 devices",
    spec: { pools: [pool([{ type: "raidz2", blockDevices: devices("z2", 5) }])] },
    says: [
      "spec.pools[0].raidGroups[0]: ",
      "a raidz2 raid group needs 4, 6, 10, 18 or 34 block devices (2^n+2), it has 5",
    ],
    reason: "InvalidDeviceCount",
  },
  {
    name: "the same device twice in a group",
    spec: {
      pools: [
        pool([{ type: "mirror", blockDevices: [{ blockDeviceName: "d-1" }, { blockDeviceName: "d-1" }] }]),
      ],
    },
    // blockDevices is a list-map keyed by blockDeviceName: server-side apply refuses the second entry.
    says: ['.spec.pools[0].raidGroups[0].blockDevices: duplicate entries for key [blockDeviceName="d-1"]'],
    reason: "DuplicateBlockDevice",
  },
  {
    name: "a group without a type and no default",
    spec: { pools: [pool([{ blockDevices: devices("t", 2) }])] },
    says: [
      "spec.pools[0]: ",
      "a raid group has no type and the pool has no poolConfig.defaultRaidGroupType: set one of them",
    ],
    reason: "MissingRaidType",
  },
];

async function getJson(cluster: KubeCluster, ...args: string[]): Promise<any> {
  return JSON.parse((await cluster.kubectl(["get", ...args, "-o", "json"])).stdout);
}

/** `kubectl get` as a table: the header's column names and each row's cells by column. */
async function table(
  cluster: KubeCluster,
  ...args: string[]
): Promise<{ columns: string[]; rows: Record<string, string>[] }> {
  const { stdout } = await cluster.kubectl(["get", ...args]);
  const [header, ...lines] = stdout.trimEnd().split("\n");
  const columns = header.trim().split(/\s+/);
  const starts = columns.map((c) => header.indexOf(c));
  const rows = lines.map((line) =>
    Object.fromEntries(columns.map((c, i) => [c, line.slice(starts[i], starts[i + 1]).trim()])),
  );
  return { columns, rows };
}

describe("integration: CRDs through kubectl on a real kube-apiserver", function () {
  this.timeout(20 * 60_000);
  let cluster: KubeCluster;

  before(async () => {
    cluster = await projectInstalled();
  });

  describe("CEL and schema rules refuse an invalid CSPC at apply time, without the webhook", () => {
    for (const c of INVALID) {
      it(`refuses ${c.name}`, async () => {
        expect(
          checkCspcSpec(c.spec).map((v) => v.reason),
          "the TypeScript rules agree",
        ).to.include(c.reason);
        const name = `invalid-${c.name.replace(/[^a-z0-9]+/g, "-")}`;
        const result = await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
          input: JSON.stringify(cspc(name, c.spec)),
          allowFailure: true,
        });
        expect(result.exitCode).to.equal(1);
        expect(result.stderr).to.contain(name);
        for (const words of c.says) expect(result.stderr).to.contain(words);
        const after = await cluster.kubectl(["get", "cspc", name, "-n", INSTALL_NAMESPACE], {
          allowFailure: true,
        });
        expect(after.stderr, "nothing was created").to.contain("NotFound");
      });
    }

    it("accepts the valid neighbours of those cases (mirror 2, raidz 3, raidz2 4, default type)", async () => {
      const spec: CSPCSpec = {
        pools: [
          pool([{ type: "mirror", blockDevices: devices("ok-m", 2) }]),
          {
            ...pool([{ type: "raidz", blockDevices: devices("ok-z", 3) }]),
            nodeSelector: { "kubernetes.io/hostname": "node-2" },
          },
          {
            ...pool([{ type: "raidz2", blockDevices: devices("ok-z2", 4) }]),
            nodeSelector: { "kubernetes.io/hostname": "node-3" },
          },
          {
            ...pool([{ blockDevices: devices("ok-d", 2) }], { defaultRaidGroupType: "mirror" }),
            nodeSelector: { "kubernetes.io/hostname": "node-4" },
          },
        ],
      };
      expect(checkCspcSpec(spec)).to.deep.equal([]);
      await cluster.kubectl(["apply", "--server-side", "--dry-run=server", "-f", "-"], {
        input: JSON.stringify(cspc("valid-neighbours", spec)),
      });
    });
  });

  it("`kubectl get cspc` prints HEALTHYINSTANCES PROVISIONEDINSTANCES DESIREDINSTANCES PHASE AGE from the status", async () => {
    const name = "printer-columns";
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: JSON.stringify(
        cspc(name, { pools: [pool([{ type: "stripe", blockDevices: devices("pc", 1) }])] }),
      ),
    });
    const status = {
      desiredInstances: 3,
      provisionedInstances: 2,
      healthyInstances: 1,
      observedGeneration: 1,
      phase: "Provisioning",
    };
    const patched = await cluster.request(
      cluster.admin,
      "PATCH",
      `/apis/${API_VERSION}/namespaces/${INSTALL_NAMESPACE}/cstorpoolclusters/${name}/status`,
      { status },
      "application/merge-patch+json",
    );
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);

    const { columns, rows } = await table(cluster, "cspc", name, "-n", INSTALL_NAMESPACE);
    expect(columns).to.deep.equal([
      "NAME",
      "HEALTHYINSTANCES",
      "PROVISIONEDINSTANCES",
      "DESIREDINSTANCES",
      "PHASE",
      "AGE",
    ]);
    expect(rows).to.have.length(1);
    expect(rows[0]).to.deep.include({
      NAME: name,
      HEALTHYINSTANCES: "1",
      PROVISIONEDINSTANCES: "2",
      DESIREDINSTANCES: "3",
      PHASE: "Provisioning",
    });
    expect(rows[0].AGE).to.match(/^\d+s$/);
  });

  it("`kubectl get cspi` prints HOSTNAME ALLOCATED FREE CAPACITY HEALTHYREPLICAS PROVISIONEDREPLICAS STATUS AGE", async () => {
    const name = "printer-columns-cspi";
    const cspi = {
      apiVersion: API_VERSION,
      kind: KIND.cspi,
      metadata: {
        name,
        namespace: INSTALL_NAMESPACE,
        labels: { "openebs.io/cstor-pool-cluster": "printer-columns" },
      },
      spec: {
        hostName: "node-1",
        nodeSelector: { "kubernetes.io/hostname": "node-1" },
        poolConfig: { compression: "off", roThresholdLimit: 85 },
        raidGroups: [
          {
            type: "mirror",
            blockDevices: [
              { blockDeviceName: "pcs-bd-1", devLink: "/dev/sdb", capacity: 10737418240 },
              { blockDeviceName: "pcs-bd-2", devLink: "/dev/sdc", capacity: 10737418240 },
            ],
          },
        ],
      },
    };
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(cspi) });
    const status = {
      phase: "ONLINE",
      capacity: { total: "9920Mi", free: "9600Mi", used: "320Mi" },
      healthyReplicas: 2,
      provisionedReplicas: 3,
      readOnly: false,
    };
    const patched = await cluster.request(
      cluster.admin,
      "PATCH",
      `/apis/${API_VERSION}/namespaces/${INSTALL_NAMESPACE}/cstorpoolinstances/${name}/status`,
      { status },
      "application/merge-patch+json",
    );
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
    const stored = await getJson(cluster, "cspi", name, "-n", INSTALL_NAMESPACE);
    expect(stored.status).to.deep.include(status);

    const { columns, rows } = await table(cluster, "cspi", name, "-n", INSTALL_NAMESPACE);
    expect(columns).to.deep.equal([
      "NAME",
      "HOSTNAME",
      "ALLOCATED",
      "FREE",
      "CAPACITY",
      "HEALTHYREPLICAS",
      "PROVISIONEDREPLICAS",
      "STATUS",
      "AGE",
    ]);
    expect(rows[0]).to.deep.include({
      NAME: name,
      HOSTNAME: "node-1",
      ALLOCATED: "320Mi",
      FREE: "9600Mi",
      CAPACITY: "9920Mi",
      HEALTHYREPLICAS: "2",
      PROVISIONEDREPLICAS: "3",
      STATUS: "ONLINE",
    });
    const wide = await table(cluster, "cspi", name, "-n", INSTALL_NAMESPACE, "-o", "wide");
    expect(wide.rows[0]).to.deep.include({ READONLY: "false", TYPE: "mirror" });
  });

  describe("volume CRDs (cvc, cv, cvr)", () => {
    const cvc = (name: string, spec: Record<string, unknown>) => ({
      apiVersion: API_VERSION,
      kind: KIND.cvc,
      metadata: { name, namespace: INSTALL_NAMESPACE },
      spec: { capacity: "10Gi", cstorPoolCluster: "pools", replicaCount: 3, ...spec },
    });
    const apply = (object: object, allowFailure = false) =>
      cluster.kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(object), allowFailure });

    it("refuse a capacity shrink, compared as quantities (1Gi equals 1024Mi), with the message", async () => {
      await apply(cvc("shrink", {}));
      await apply(cvc("shrink", { capacity: "10240Mi" }));
      await apply(cvc("shrink", { capacity: "11Gi" }));
      const refused = await apply(cvc("shrink", { capacity: "10Gi" }), true);
      expect(refused.exitCode).to.equal(1);
      expect(refused.stderr).to.contain("spec.capacity cannot shrink (from 11Gi to 10Gi)");
      expect(
        (await getJson(cluster, "cvc", "shrink", "-n", INSTALL_NAMESPACE)).spec.capacity,
        "nothing changed",
      ).to.equal("11Gi");
    });

    it("let an unpinned volume's replicaCount change within 1..5 (decision 27), and refuse 6", async () => {
      await apply(cvc("scaled", {}));
      await apply(cvc("scaled", { replicaCount: 4 }));
      await apply(cvc("scaled", { replicaCount: 1 }));
      expect((await getJson(cluster, "cvc", "scaled", "-n", INSTALL_NAMESPACE)).spec.replicaCount).to.equal(
        1,
      );
      const refused = await apply(cvc("scaled", { replicaCount: 6 }), true);
      expect(refused.exitCode).to.equal(1);
      expect(refused.stderr).to.contain("spec.replicaCount");
      expect(
        (await getJson(cluster, "cvc", "scaled", "-n", INSTALL_NAMESPACE)).spec.replicaCount,
        "nothing changed",
      ).to.equal(1);
    });

    it("refuse a change of cstorPoolCluster, a pinned volume's replicaCount, pinnedPools or source, with the message", async () => {
      await apply(cvc("immutable", { replicaCount: 2, pinnedPools: ["p-1", "p-2"] }));
      const edits: [Record<string, unknown>, string][] = [
        [
          { replicaCount: 2, pinnedPools: ["p-1", "p-2"], cstorPoolCluster: "other" },
          "spec.cstorPoolCluster cannot change (from pools to other)",
        ],
        [
          { replicaCount: 3, pinnedPools: ["p-1", "p-2", "p-3"] },
          "spec.replicaCount of a volume with spec.pinnedPools cannot change",
        ],
        [{ replicaCount: 2, pinnedPools: ["p-1", "p-3"] }, "spec.pinnedPools cannot change"],
        [
          { replicaCount: 2, pinnedPools: ["p-1", "p-2"], source: { snapshot: "s", volume: "v" } },
          "spec.source cannot change",
        ],
      ];
      for (const [spec, says] of edits) {
        const refused = await apply(cvc("immutable", spec), true);
        expect(refused.exitCode, says).to.equal(1);
        expect(refused.stderr, refused.stderr).to.contain(says);
      }
    });

    it("refuse pinnedPools that name a pool twice or do not match replicaCount", async () => {
      const twice = await apply(cvc("pins-twice", { replicaCount: 2, pinnedPools: ["p-1", "p-1"] }), true);
      expect(twice.stderr).to.contain("spec.pinnedPools names a pool twice");
      const count = await apply(cvc("pins-count", { replicaCount: 3, pinnedPools: ["p-1", "p-2"] }), true);
      expect(count.stderr).to.contain("spec.pinnedPools must name exactly replicaCount pools");
      for (const name of ["pins-twice", "pins-count"]) {
        const after = await cluster.kubectl(["get", "cvc", name, "-n", INSTALL_NAMESPACE], {
          allowFailure: true,
        });
        expect(after.stderr, "nothing was created").to.contain("NotFound");
      }
    });

    const patchStatus = async (resource: string, name: string, status: object): Promise<void> => {
      const patched = await cluster.request(
        cluster.admin,
        "PATCH",
        `/apis/${API_VERSION}/namespaces/${INSTALL_NAMESPACE}/${resource}/${name}/status`,
        { status },
        "application/merge-patch+json",
      );
      expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
    };

    it("`kubectl get cvc` prints CAPACITY POOLCLUSTER REPLICAS PHASE AGE", async () => {
      await apply(cvc("columns", {}));
      await patchStatus("cstorvolumeconfigs", "columns", { phase: "Bound", pools: ["p-1", "p-2", "p-3"] });
      const { columns, rows } = await table(cluster, "cvc", "columns", "-n", INSTALL_NAMESPACE);
      expect(columns).to.deep.equal(["NAME", "CAPACITY", "POOLCLUSTER", "REPLICAS", "PHASE", "AGE"]);
      expect(rows[0]).to.deep.include({
        NAME: "columns",
        CAPACITY: "10Gi",
        POOLCLUSTER: "pools",
        REPLICAS: "3",
        PHASE: "Bound",
      });
    });

    it("`kubectl get cv` prints CAPACITY PHASE RF CF HEALTHY AGE", async () => {
      const cv = {
        apiVersion: API_VERSION,
        kind: KIND.cv,
        metadata: { name: "columns", namespace: INSTALL_NAMESPACE },
        spec: {
          capacity: "10Gi",
          targetPort: "3260",
          iqn: "iqn.2016-09.com.openebs.cstor:columns",
          replicationFactor: 3,
          consistencyFactor: 2,
          desiredReplicationFactor: 3,
        },
      };
      await apply(cv);
      await patchStatus("cstorvolumes", "columns", { phase: "Degraded", healthyReplicas: 2 });
      const { columns, rows } = await table(cluster, "cv", "columns", "-n", INSTALL_NAMESPACE);
      expect(columns).to.deep.equal(["NAME", "CAPACITY", "PHASE", "RF", "CF", "HEALTHY", "AGE"]);
      expect(rows[0]).to.deep.include({
        NAME: "columns",
        CAPACITY: "10Gi",
        PHASE: "Degraded",
        RF: "3",
        CF: "2",
        HEALTHY: "2",
      });
    });

    it("`kubectl get cvr` prints POOL NODE ALLOCATED USED PHASE AGE, the pool and node from the replica's label and annotation", async () => {
      const cvr = {
        apiVersion: API_VERSION,
        kind: KIND.cvr,
        metadata: {
          name: "columns-p-1",
          namespace: INSTALL_NAMESPACE,
          labels: { "cstorpoolinstance.openebs.io/name": "p-1", "cstorvolume.openebs.io/name": "columns" },
          annotations: { "cstorpoolinstance.openebs.io/hostname": "node-a" },
        },
        spec: { capacity: "10Gi", replicaId: "r-1" },
      };
      await apply(cvr);
      await patchStatus("cstorvolumereplicas", "columns-p-1", {
        phase: "Healthy",
        capacity: { total: "10Gi", used: "1536Mi" },
      });
      const { columns, rows } = await table(cluster, "cvr", "columns-p-1", "-n", INSTALL_NAMESPACE);
      expect(columns).to.deep.equal(["NAME", "POOL", "NODE", "ALLOCATED", "USED", "PHASE", "AGE"]);
      expect(rows[0]).to.deep.include({
        NAME: "columns-p-1",
        POOL: "p-1",
        NODE: "node-a",
        ALLOCATED: "10Gi",
        USED: "1536Mi",
        PHASE: "Healthy",
      });
    });
  });
});
