// The views against the real apiserver: the objects of test/fixtures/cli/views/cluster.yaml created in a namespace
// of this test's own (status through the status subresource, Events through the core API), then the installed
// plugin (`kubectl cstor-pool`, through kubectl's plugin lookup and npm's symlink) and the subcommands read them
// back. What the apiserver serves must show exactly as the files they were made from (test/cli/views.test.ts
// checks those), and a user without rights or without a reachable apiserver is told which resource failed.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { parse, stringify } from "yaml";
import { GROUP, KIND, VERSION } from "../../api/constants.js";
import type { KubeObject } from "../../api/types.js";
import { CUSTOM_PLURAL } from "../../cli/cluster.js";
import { processIO, readAll, type CliIO } from "../../cli/input.js";
import { runDescribe, runGet, runTree } from "../../cli/views-command.js";
import { installedPackage, runProgram, type Installed } from "../support/installed.js";
import { projectInstalled, repoPath, type KubeCluster } from "../../testkit/kube.js";

const FIXTURE = repoPath("test/fixtures/cli/views/cluster.yaml");
const NS = "views-it";

/** Where each kind is created: the project's kinds where the views list them, and the two built-in ones. */
const PLURAL: Record<string, string> = {
  ...Object.fromEntries(
    Object.entries(CUSTOM_PLURAL).map(([kind, plural]) => [
      kind,
      `/apis/${GROUP}/${VERSION}/namespaces/NS/${plural}`,
    ]),
  ),
  [KIND.deployment]: "/apis/apps/v1/namespaces/NS/deployments",
  [KIND.event]: "/api/v1/namespaces/NS/events",
};

/** A fixture object moved to the test's namespace; a Deployment gets the spec the apiserver requires. */
function here(object: KubeObject): KubeObject {
  const moved = { ...object, metadata: { ...object.metadata, namespace: NS } } as KubeObject &
    Record<string, any>;
  if (object.kind === KIND.event) moved.involvedObject = { ...moved.involvedObject, namespace: NS };
  if (object.kind === KIND.deployment) {
    const labels = { app: object.metadata.name! };
    moved.spec = {
      ...moved.spec,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: "pool", image: "example.invalid/pool" }] },
      },
    };
  }
  return moved;
}

/** A copy of a kubeconfig, changed (kubectl config would do the same). */
function kubeconfigCopy(
  from: string,
  to: string,
  change: (config: {
    contexts: { context: Record<string, string> }[];
    clusters: { cluster: Record<string, string> }[];
  }) => void,
): string {
  const config = parse(readFileSync(from, "utf8")) as Parameters<typeof change>[0];
  change(config);
  writeFileSync(to, stringify(config), { mode: 0o600 });
  return to;
}

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

describe("cstor-pool views on the real apiserver", function () {
  this.timeout(5 * 60_000);
  let cluster: KubeCluster;
  let installed: Installed;

  before(async () => {
    [cluster, installed] = await Promise.all([projectInstalled(), installedPackage()]);
    await cluster.kubectl(["create", "namespace", NS]);
    for (const object of readAll(processIO, [FIXTURE])
      .filter((o) => o.metadata?.namespace === "openebs")
      .map(here)) {
      const path = PLURAL[object.kind].replace("NS", NS);
      const created = await cluster.request(cluster.admin, "POST", path, object);
      expect(
        created.status,
        `${object.kind} ${object.metadata.name}: ${JSON.stringify(created.body)}`,
      ).to.equal(201);
      // NDM's claim has no status subresource: its status was written with it.
      if (object.status && object.kind !== KIND.blockDeviceClaim) {
        const status = await cluster.request(
          cluster.admin,
          "PATCH",
          `${path}/${object.metadata.name}/status`,
          { status: object.status },
          "application/merge-patch+json",
        );
        expect(
          status.status,
          `${object.kind} ${object.metadata.name} status: ${JSON.stringify(status.body)}`,
        ).to.equal(200);
      }
    }
  });

  it("`kubectl cstor-pool get pools -o wide`, as installed, prints what the files the objects came from print", async () => {
    const env = {
      ...process.env,
      PATH: `${installed.bin}:${process.env.PATH}`,
      KUBECONFIG: cluster.admin.kubeconfig,
    };
    const fromCluster = await runProgram("kubectl", ["cstor-pool", "get", "pools", "-o", "wide", "-n", NS], {
      env,
    });
    expect(fromCluster.code, fromCluster.stderr).to.equal(0);
    const fromFiles = await run(runGet, "pools", "-o", "wide", "-f", FIXTURE);
    expect(fromCluster.stdout).to.equal(fromFiles.stdout);
    expect(fromCluster.stdout).to.match(
      /^pools-d4e5f6 +node-2 +DEGRADED +\[########--\] +78% +0\/1 +pools +7Gi +9Gi +1\/2 +no +cstor-pools-d4e5f6 +2026-11-21T10:00:00Z$/m,
    );
  });

  it("get volumes, describe pool and tree read the same from the apiserver as from the files", async () => {
    const kubeconfig = ["--kubeconfig", cluster.admin.kubeconfig, "-n", NS];
    for (const [command, args] of [
      [runGet, ["volumes", "-o", "wide"]],
      [runTree, []],
      [runDescribe, ["pool", "pools-d4e5f6"]],
    ] as const) {
      const fromCluster = await run(command, ...args, ...kubeconfig);
      const fromFiles = await run(command, ...args, "-f", FIXTURE);
      expect(fromCluster.code, fromCluster.stderr).to.equal(0);
      expect(fromCluster.stdout, args.join(" ")).to.equal(
        fromFiles.stdout.replace("Namespace:    openebs", `Namespace:    ${NS}`),
      );
    }
    const described = await run(runDescribe, "pool", "pools-d4e5f6", ...kubeconfig);
    expect(described.stdout).to.match(
      /^ {4}bd-n2-b +UNAVAIL +0 +0 +0 +bdc-bd-n2-b \(Bound\) +\/dev\/disk\/by-id\/ata-disk-n2-b +was /m,
    );
    expect(described.stdout, "Events with times read back from the apiserver").to.match(
      /^ {2}2026-11-21T09:50:00Z +Warning +PoolDegraded +3 /m,
    );
  });

  it("takes the namespace from the kubeconfig's context, as kubectl does", async () => {
    const kubeconfig = kubeconfigCopy(
      cluster.admin.kubeconfig,
      join(installed.root, "context-namespace.kubeconfig"),
      (c) => void (c.contexts[0].context.namespace = NS),
    );
    const run1 = await runProgram(join(installed.bin, "cstor-pool"), ["get", "pools"], {
      env: { ...process.env, KUBECONFIG: kubeconfig },
    });
    expect(run1.code, run1.stderr).to.equal(0);
    expect(
      run1.stdout
        .split("\n")
        .slice(1, 3)
        .map((l) => l.split(/\s+/)[0]),
    ).to.deep.equal(["pools-a1b2c3", "pools-d4e5f6"]);
  });

  it("a pool that does not exist: the CSPIs that do, exit 1", async () => {
    const missing = await run(
      runDescribe,
      "pool",
      "pools-zzz",
      "--kubeconfig",
      cluster.admin.kubeconfig,
      "-n",
      NS,
    );
    expect([missing.code, missing.stdout, missing.stderr]).to.deep.equal([
      1,
      "",
      `error: no CStorPoolInstance "pools-zzz" in namespace ${NS}; it has: pools-a1b2c3, pools-d4e5f6\n`,
    ]);
  });

  it("without the right to list: which resource, in which namespace, exit 2", async () => {
    await cluster.kubectl(["create", "serviceaccount", "nobody", "-n", NS]);
    const nobody = await cluster.serviceAccount(NS, "nobody");
    const denied = await run(runGet, "pools", "--kubeconfig", nobody.kubeconfig, "-n", NS);
    expect([denied.code, denied.stdout]).to.deep.equal([2, ""]);
    expect(denied.stderr).to.match(
      new RegExp(
        `^error: cannot list cstorpoolinstances\\.openebs\\.io in namespace ${NS}: forbidden \\(.*system:serviceaccount:${NS}:nobody.*\\); ask for list on cstorpoolinstances\\.openebs\\.io\\n$`,
      ),
    );
  });

  it("an apiserver that cannot be reached: says where it tried, exit 2", async () => {
    const kubeconfig = kubeconfigCopy(
      cluster.admin.kubeconfig,
      join(installed.root, "unreachable.kubeconfig"),
      (c) => void (c.clusters[0].cluster.server = "https://127.0.0.1:1"),
    );
    const unreachable = await run(runTree, "--kubeconfig", kubeconfig, "-n", NS);
    expect(unreachable.code).to.equal(2);
    expect(unreachable.stderr).to.match(
      /^error: cannot list \S+ in namespace views-it: cannot reach the apiserver at https:\/\/127\.0\.0\.1:1: /,
    );
  });
});
