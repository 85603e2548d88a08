// `cstor-pool render`: the hooks' output for a CSPC, for review before applying. Golden: the seed's mirror
// example on two nodes (test/fixtures/render/mirror/expected.yaml, reviewed like code).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { parseAllDocuments } from "yaml";
import { KIND } from "../../api/constants.js";
import { runRender } from "../../cli/render.js";
import { cspiName } from "../../lib/names.js";
import { FIXTURES, updatingGolden } from "../support/golden.js";

const REPO = new URL("../../", import.meta.url).pathname;
const MIRROR = join(REPO, "metacontroller/samples/cspc-mirror.yaml");
const CASE = join(FIXTURES, "render/mirror");
const DEVICES = join(CASE, "blockdevices.yaml");
const NODES = join(CASE, "nodes.yaml");

async function render(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runRender(argv, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    readFile: (path) => readFileSync(path, "utf8"),
  });
  return { code, stdout, stderr };
}

const objectsOf = (yaml: string) =>
  parseAllDocuments(yaml).map((d) => d.toJS() as { kind: string; metadata: { name: string } });

describe("cli: cstor-pool render", () => {
  it("prints the claims, CStorPoolInstances and pool Deployments the hooks would create (golden)", async () => {
    const { code, stdout, stderr } = await render("-f", MIRROR, "--block-devices", DEVICES, "--nodes", NODES);
    expect(stderr).to.equal("");
    expect(code).to.equal(0);
    const golden = join(CASE, "expected.yaml");
    if (updatingGolden()) writeFileSync(golden, stdout);
    expect(stdout).to.equal(readFileSync(golden, "utf8"));

    const objects = objectsOf(stdout);
    const count = (kind: string) => objects.filter((o) => o.kind === kind).length;
    expect([count(KIND.blockDeviceClaim), count(KIND.cspi), count(KIND.deployment)]).to.deep.equal([8, 2, 2]);
    const names = objects.filter((o) => o.kind === KIND.cspi).map((o) => o.metadata.name);
    expect(names).to.deep.equal([
      cspiName("openebs", "cstor-pool-mirror", ["pool-1-bd-1", "pool-1-bd-2", "pool-1-bd-3", "pool-1-bd-4"]),
      cspiName("openebs", "cstor-pool-mirror", ["pool-2-bd-1", "pool-2-bd-2", "pool-2-bd-3", "pool-2-bd-4"]),
    ]);
    expect(stdout.split("\n")[0]).to.equal(
      "# CStorPoolCluster openebs/cstor-pool-mirror: 2 pool(s), 2 would be provisioned",
    );
  });

  it("gives the same output every time (names and order are stable)", async () => {
    const first = await render("-f", MIRROR, "--block-devices", DEVICES, "--nodes", NODES);
    const second = await render("-f", MIRROR, "--block-devices", DEVICES, "--nodes", NODES);
    expect(second.stdout).to.equal(first.stdout);
  });

  it("without --nodes assumes a node per nodeSelector, as validate does, and says so", async () => {
    const { code, stdout, stderr } = await render("-f", MIRROR, "--block-devices", DEVICES);
    expect(code).to.equal(0);
    expect(stderr).to.contain(
      "note: no --nodes: each distinct nodeSelector is assumed to select one node of its own (gke-cstor-it-default-pool-1, gke-cstor-it-default-pool-2)",
    );
    expect(stdout).to.equal(
      (await render("-f", MIRROR, "--block-devices", DEVICES, "--nodes", NODES)).stdout,
    );
  });

  it("exits 1 and prints the reason when a pool cannot be built", async () => {
    const onlyPoolOne = objectsOf(readFileSync(DEVICES, "utf8"))[0] as unknown as {
      items: { metadata: { name: string } }[];
    };
    const devices = {
      apiVersion: "v1",
      kind: "List",
      items: onlyPoolOne.items.filter((d) => d.metadata.name.startsWith("pool-1-")),
    };
    let stdout = "";
    const code = await runRender(["-f", MIRROR, "--block-devices", "devices.yaml", "--nodes", NODES], {
      stdout: (text) => (stdout += text),
      stderr: () => undefined,
      readFile: (path) => (path === "devices.yaml" ? JSON.stringify(devices) : readFileSync(path, "utf8")),
    });
    expect(code).to.equal(1);
    expect(stdout).to.contain("2 pool(s), 1 would be provisioned");
    expect(stdout).to.match(/# ProvisioningBlocked=True \(\w+\): .*pool-2-bd-1/);
    const objects = objectsOf(stdout);
    expect(objects.filter((o) => o.kind === KIND.cspi)).to.have.length(1);
  });

  it("exits 2 with the usage on bad arguments", async () => {
    for (const argv of [
      [],
      ["-f"],
      ["--bogus", "x"],
      ["-f", MIRROR, "-o", "wide"],
      ["-f", MIRROR, "-n", "default"],
    ]) {
      const { code, stderr } = await render(...argv);
      expect(code, argv.join(" ")).to.equal(2);
      expect(stderr).to.match(/^error: .+\n\nUsage: cstor-pool render/);
    }
  });

  it("exits 2 without the usage on input it cannot render", async () => {
    for (const [argv, message] of [
      [["-f", DEVICES], `error: ${DEVICES} holds BlockDevice; only CStorPoolClusters can be rendered\n`],
      [
        ["-f", "/nonexistent.yaml"],
        "error: cannot read /nonexistent.yaml: ENOENT: no such file or directory, open '/nonexistent.yaml'\n",
      ],
    ] as const) {
      const { code, stderr } = await render(...argv);
      expect([code, stderr]).to.deep.equal([2, message]);
    }
  });

  it("-o json: the verdict, the problems and the objects of each CSPC", async () => {
    const { code, stdout } = await render(
      "-f",
      MIRROR,
      "--block-devices",
      DEVICES,
      "--nodes",
      NODES,
      "-o",
      "json",
    );
    expect(code).to.equal(0);
    const { items } = JSON.parse(stdout) as {
      items: {
        name: string;
        verdict: string;
        pools: number;
        provisioned: number;
        problems: unknown[];
        objects: { kind: string }[];
      }[];
    };
    expect(
      items.map((i) => [i.name, i.verdict, i.pools, i.provisioned, i.problems.length, i.objects.length]),
    ).to.deep.equal([["cstor-pool-mirror", "accepted", 2, 2, 0, 12]]);
    const golden = objectsOf(readFileSync(join(CASE, "expected.yaml"), "utf8"));
    expect(items[0].objects).to.deep.equal(golden);
  });
});
