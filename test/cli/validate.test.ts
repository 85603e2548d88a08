// `cstor-pool validate`: the webhook's verdicts offline. Files are held in memory; the golden admission cases
// are replayed through the CLI with their cluster objects as `kubectl get -o yaml` lists, and must get the
// same verdict and messages as through the webhook.
import { expect } from "chai";
import { parse, stringify } from "yaml";
import { runValidate } from "../../cli/validate.js";
import type { KubeObject } from "../../api/types.js";
import { goldenCases } from "../support/golden.js";
import { cspc, cspi, type PoolDef } from "../hooks/admission/world.js";

interface Run {
  code: number;
  out: string;
  err: string;
}

async function validate(argv: string[], files: Record<string, string>): Promise<Run> {
  let out = "";
  let err = "";
  const code = await runValidate(argv, {
    stdout: (t) => (out += t),
    stderr: (t) => (err += t),
    readFile: (path) => {
      if (!(path in files)) throw new Error(`ENOENT: no such file or directory, open '${path}'`);
      return files[path];
    },
  });
  return { code, out, err };
}

const yaml = (value: unknown) => stringify(value, { version: "1.1" });
const list = (items: readonly KubeObject[]) => yaml({ apiVersion: "v1", kind: "List", items });

const A: PoolDef = { host: "node-a", groups: [{ type: "mirror", devices: ["a1", "a2"] }] };
const B: PoolDef = { host: "node-b", groups: [{ type: "stripe", devices: ["b1", "b2"] }] };

describe("cstor-pool validate", () => {
  it("accepts a valid CSPC (exit 0) and says what it assumed without cluster files", async () => {
    const run = await validate(["-f", "new.yaml"], { "new.yaml": yaml(cspc([A, B])) });
    expect(run.code).to.equal(0);
    expect(run.out).to.include("CStorPoolCluster openebs/pools: accepted");
    expect(run.err).to.include(
      "note: no --nodes: each distinct nodeSelector is assumed to select one node of its own (node-a, node-b)\n",
    );
    expect(run.err).to.include("note: no --block-devices: every device is assumed to exist");
  });

  it("refuses (exit 1) with one line per problem", async () => {
    const bad = cspc([
      { host: "node-a", groups: [{ type: "raidz", devices: ["a1", "a2", "a3", "a4"] }] },
      { host: "node-a", groups: [{ type: "stripe", devices: ["a5"] }] },
    ]);
    const run = await validate(["-f", "new.yaml"], { "new.yaml": yaml(bad) });
    expect(run.code).to.equal(1);
    expect(run.out).to.include("CStorPoolCluster openebs/pools: refused\n");
    expect(run.out).to.include(
      "  - spec.pools[0] (nodeSelector kubernetes.io/hostname=node-a) raidGroups[0]: a raidz raid group needs 3, 5, 9, 17 or 33 block devices (2^n+1), it has 4\n",
    );
  });

  it("refuses the seed's bare `compression: off`, which YAML (as kubectl reads it) turns into false", async () => {
    const text = yaml(cspc([{ ...A, poolConfig: { compression: "lz4" } }])).replace(
      "compression: lz4",
      "compression: off",
    );
    const run = await validate(["-f", "new.yaml"], { "new.yaml": text });
    expect(run.code).to.equal(1);
    expect(run.out).to.include(
      'spec.pools[0].poolConfig.compression is false, it must be one of off, on, lz4, lzjb, gzip, zle (YAML reads a bare off as false: quote it, "off")',
    );
  });

  it("a mistyped compression gets the rule's \"did you mean lz4?\", not only the schema's list", async () => {
    const text = yaml(cspc([{ ...A, poolConfig: { compression: "lz4" } }])).replace(
      "compression: lz4",
      "compression: lz",
    );
    const run = await validate(["-f", "new.yaml", "-o", "json"], { "new.yaml": text });
    expect(run.code).to.equal(1);
    const [problem] = (JSON.parse(run.out) as { items: { problems: Record<string, unknown>[] }[] }).items[0]
      .problems;
    expect(problem).to.include({
      pool: 0,
      field: "spec.pools[0].poolConfig.compression",
      fix: "use one of off, on, lz4, lzjb, gzip, zle",
    });
    expect(problem.message).to.contain('poolConfig.compression "lz" is not supported (did you mean lz4?)');
  });

  it("checks a change against --old: the stored pools stand in for their CSPIs", async () => {
    const files = { "old.yaml": yaml(cspc([A, B])) };
    const removed = await validate(["-f", "new.yaml", "--old", "old.yaml"], {
      ...files,
      "new.yaml": yaml(cspc([A, { ...B, groups: [{ type: "stripe", devices: ["b1"] }] }])),
    });
    expect(removed.code).to.equal(1);
    expect(removed.out).to.include("CStorPoolCluster openebs/pools (change): refused");
    expect(removed.out).to.match(
      /raidGroups\[0\] \(stripe: b1, b2\): block device b2 was removed; data on it would be lost: put it back/,
    );
    expect(removed.err).to.include("note: no CStorPoolInstances given: the pools of --old are assumed built");

    const expanded = await validate(["-f", "new.yaml", "--old", "old.yaml"], {
      ...files,
      "new.yaml": yaml(cspc([A, { ...B, groups: [{ type: "stripe", devices: ["b1", "b2", "b3"] }] }])),
    });
    expect(expanded.code, expanded.out).to.equal(0);
    expect(expanded.out).to.include("CStorPoolCluster openebs/pools (change): accepted");
  });

  it("reads the file to check from standard input with -f -", async () => {
    const run = await validate(["-f", "-"], { "-": yaml(cspc([A])) });
    expect(run.code).to.equal(0);
  });

  describe("usage errors exit 2 with the usage text", () => {
    const cases: [string, string[], Record<string, string>, RegExp][] = [
      ["no -f", [], {}, /error: -f <file> is required/],
      ["an unknown flag", ["-f", "new.yaml", "--force"], { "new.yaml": "" }, /error: unknown flag --force\n/],
      [
        "a mistyped flag",
        ["-f", "new.yaml", "--block-device", "x"],
        { "new.yaml": "" },
        /error: unknown flag --block-device \(did you mean --block-devices\?\)/,
      ],
      ["a flag without its file", ["-f"], {}, /error: -f needs a value/],
      [
        "two files on standard input",
        ["-f", "-", "--old", "-"],
        { "-": "" },
        /error: only one file can be "-" \(standard input\), not -f and old/,
      ],
      [
        "an unknown output format",
        ["-f", "new.yaml", "-o", "jsn"],
        { "new.yaml": "" },
        /error: -o jsn is not an output format: use yaml or json \(did you mean json\?\)/,
      ],
    ];
    for (const [name, argv, files, message] of cases) {
      it(name, async () => {
        const run = await validate(argv, files);
        expect(run.code).to.equal(2);
        expect(run.err).to.match(message);
        expect(run.err).to.include("Usage: cstor-pool validate -f <file|dir|->");
      });
    }
  });

  describe("unreadable input exits 2 with the reason and no usage text", () => {
    const cases: [string, string[], Record<string, string>, string][] = [
      [
        "a missing file",
        ["-f", "gone.yaml"],
        {},
        "error: cannot read gone.yaml: ENOENT: no such file or directory, open 'gone.yaml'\n",
      ],
      [
        "a file that is not YAML",
        ["-f", "new.yaml"],
        { "new.yaml": "pools: [a\n" },
        "error: new.yaml is not valid YAML: ",
      ],
      ["an empty file", ["-f", "new.yaml"], { "new.yaml": "" }, "error: new.yaml holds no object\n"],
    ];
    for (const [name, argv, files, message] of cases) {
      it(name, async () => {
        const run = await validate(argv, files);
        expect(run.code).to.equal(2);
        expect(run.err.startsWith(message), run.err).to.equal(true);
        expect(run.err).not.to.include("Usage:");
      });
    }
  });

  it("-o json: one item per CSPC with its problems split into pool, field, reason, message and fix", async () => {
    const bad = cspc([{ host: "node-a", groups: [{ type: "raidz", devices: ["a1", "a2", "a3", "a4"] }] }]);
    const run = await validate(["-f", "new.yaml", "--block-devices", "cluster.yaml", "-o", "json"], {
      "new.yaml": yaml(bad),
      "cluster.yaml": list([]),
    });
    expect(run.code).to.equal(1);
    const parsed = JSON.parse(run.out) as {
      items: { verdict: string; problems: Record<string, unknown>[] }[];
    };
    const { items } = parsed;
    expect(items).to.have.length(1);
    expect(items[0].verdict).to.equal("refused");
    expect(items[0].problems[0]).to.deep.equal({
      pool: 0,
      field: "spec.pools[0].raidGroups[0]",
      reason: "InvalidDeviceCount",
      message:
        "spec.pools[0] (nodeSelector kubernetes.io/hostname=node-a) raidGroups[0]: a raidz raid group needs 3, 5, 9, 17 or 33 block devices (2^n+1), it has 4",
    });
    const absent = await validate(["-f", "new.yaml", "--block-devices", "cluster.yaml", "-o", "json"], {
      "new.yaml": yaml(cspc([A])),
      "cluster.yaml": list([]),
    });
    const missing = (JSON.parse(absent.out) as typeof parsed).items[0].problems[0];
    expect(missing).to.deep.equal({
      pool: 0,
      field: "spec.pools[0]",
      reason: "BlockDeviceNotFound",
      message:
        "spec.pools[0] (nodeSelector kubernetes.io/hostname=node-a): block device a1 does not exist in namespace openebs: check the name (kubectl get bd -n openebs)",
      fix: "check the name (kubectl get bd -n openebs)",
    });
  });

  it("-o yaml: the same verdicts as YAML, and nothing but them on standard output", async () => {
    const files = { "new.yaml": yaml(cspc([A])) };
    const asJson = JSON.parse((await validate(["-f", "new.yaml", "-o", "json"], files)).out) as unknown;
    const run = await validate(["-f", "new.yaml", "-o", "yaml"], files);
    expect(run.code).to.equal(0);
    expect(parse(run.out)).to.deep.equal(asJson);
    expect((asJson as { items: { verdict: string; notes: string[] }[] }).items[0].notes).to.have.length(2);
  });

  it("stops (exit 2, unreadable input) at a CStorPoolInstance in --block-devices that the hooks could not read, naming it and the field", async () => {
    const broken = cspi(A);
    (broken.spec as { hostName?: unknown }).hostName = 7;
    const run = await validate(["-f", "new.yaml", "--block-devices", "cluster.yaml"], {
      "new.yaml": yaml(cspc([A])),
      "cluster.yaml": list([broken]),
    });
    expect(run.code).to.equal(2);
    expect(run.err).to.include(
      `error: CStorPoolInstance openebs/${broken.metadata.name} in --block-devices: spec.hostName must be of type string: fix it`,
    );
  });

  it("reads every manifest of a directory given with -f, and repeated -f", async () => {
    const files: Record<string, string> = {
      "dir/a.yaml": yaml(cspc([A])),
      "dir/b.json": JSON.stringify({ ...cspc([B]), metadata: { name: "b", namespace: "openebs" } }),
      "c.yaml": yaml({ ...cspc([A]), metadata: { name: "c" } }),
    };
    let out = "";
    const code = await runValidate(["-f", "dir", "-f", "c.yaml"], {
      stdout: (t) => (out += t),
      stderr: () => undefined,
      readFile: (path) => files[path],
      listDirectory: (path) => (path === "dir" ? ["b.json", "README.md", "a.yaml"] : undefined),
    });
    expect(code).to.equal(0);
    expect(out.split("\n").filter((l) => l.endsWith(": accepted"))).to.deep.equal([
      "CStorPoolCluster openebs/pools: accepted",
      "CStorPoolCluster openebs/b: accepted",
      "CStorPoolCluster openebs/c: accepted",
    ]);
  });

  it("prints the usage with --help and exits 0", async () => {
    const run = await validate(["--help"], {});
    expect(run.code).to.equal(0);
    expect(run.out).to.include(
      "Exit codes: 0 ok (accepted, or every pool renders), 1 refused (some pool would not be built), 2 usage error or unreadable input.",
    );
  });

  describe("gives the webhook's verdict on every golden admission case", () => {
    for (const g of goldenCases("admission")) {
      const review = g.read("review.yaml") as {
        request: { operation: string; object?: KubeObject | null; oldObject?: KubeObject | null };
      };
      const lookups = g.read("lookups.yaml") as { objects: KubeObject[]; fail?: unknown };
      const { operation, object, oldObject } = review.request;
      if (operation === "DELETE" || object?.kind !== "CStorPoolCluster" || lookups.fail) continue;
      it(g.name, async () => {
        const response = (
          g.read("response.yaml") as {
            response: { allowed: boolean; status?: { message: string }; warnings?: string[] };
          }
        ).response;
        const files: Record<string, string> = {
          "new.yaml": yaml(object),
          "cluster.yaml": list(lookups.objects.filter((o) => o.kind !== "Node")),
          "nodes.yaml": list(lookups.objects.filter((o) => o.kind === "Node")),
        };
        const argv = ["-f", "new.yaml", "--block-devices", "cluster.yaml", "--nodes", "nodes.yaml"];
        if (oldObject) {
          files["old.yaml"] = yaml(oldObject);
          argv.push("--old", "old.yaml");
        }
        const run = await validate(argv, files);
        expect(run.code, run.out).to.equal(response.allowed ? 0 : 1);
        const problems = (response.status?.message ?? "")
          .split("\n")
          .filter((l) => l.startsWith("- "))
          .map((l) => l.slice(2));
        const single = response.status?.message.match(/^CStorPoolCluster [^:]+: (.*)$/s)?.[1];
        for (const problem of problems.length > 0 ? problems : single ? [single] : [])
          expect(run.out).to.include(`  - ${problem}\n`);
        for (const warning of response.warnings ?? []) expect(run.out).to.include(`  warning: ${warning}\n`);

        // The same problems for programs: each names its pool's field and ends with its fix.
        const json = await validate([...argv, "-o", "json"], files);
        const [item] = (
          JSON.parse(json.out) as {
            items: { problems: { pool?: number; field?: string; message: string; fix?: string }[] }[];
          }
        ).items;
        expect(item.problems.map((p) => p.message).sort()).to.deep.equal(
          [...new Set(problems.length > 0 ? problems : single ? [single] : [])].sort(),
        );
        for (const p of item.problems) {
          if (p.pool !== undefined)
            expect(p.field, p.message).to.match(new RegExp(`^spec\\.pools\\[${p.pool}\\]`));
          if (p.fix !== undefined) expect(p.message.endsWith(`: ${p.fix}`), p.message).to.equal(true);
        }
      });
    }
  });
});
