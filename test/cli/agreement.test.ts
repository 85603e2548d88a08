// validate and render on the same files give the same verdict, make the same assumptions and say the same
// notes: a CSPC without a namespace is in the install's namespace (openebs) for both, unless -n says otherwise;
// without --block-devices both assume the devices are there. The problems render finds are the ones validate
// refuses for.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { runRender } from "../../cli/render.js";
import { runValidate } from "../../cli/validate.js";
import type { CliIO } from "../../cli/input.js";

const REPO = new URL("../../", import.meta.url).pathname;
const MIRROR = join(REPO, "metacontroller/samples/cspc-mirror.yaml");
const NO_NAMESPACE = join(REPO, "test/fixtures/cli/no-namespace.yaml");
const REFUSED = join(REPO, "test/fixtures/cli/refused-raidz.yaml");
const MALFORMED = join(REPO, "test/fixtures/cli/malformed.yaml");
const DEVICES = join(REPO, "test/fixtures/render/mirror/blockdevices.yaml");
const NODES = join(REPO, "test/fixtures/render/mirror/nodes.yaml");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(command: typeof runValidate, argv: string[]): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const io: CliIO = {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    readFile: (path) => readFileSync(path, "utf8"),
  };
  return { code: await command(argv, io), stdout, stderr };
}

const problems = (json: string) =>
  (JSON.parse(json) as { items: { problems: { message: string }[] }[] }).items
    .flatMap((i) => i.problems.map((p) => p.message))
    .sort();

describe("cli: validate and render agree", () => {
  const cases: { name: string; argv: string[]; code: number; notes: RegExp[] }[] = [
    {
      name: "a sample with its BlockDevices and Nodes",
      argv: ["-f", MIRROR, "--block-devices", DEVICES, "--nodes", NODES],
      code: 0,
      notes: [],
    },
    {
      name: "a CSPC without a namespace, its BlockDevices in openebs",
      argv: ["-f", NO_NAMESPACE, "--block-devices", DEVICES],
      code: 0,
      notes: [
        /^note: CStorPoolCluster no-namespace has no metadata.namespace: assumed openebs, the install's namespace, where NDM keeps BlockDevices/m,
      ],
    },
    {
      name: "a CSPC put in default with -n, its BlockDevices in openebs",
      argv: ["-f", NO_NAMESPACE, "-n", "default", "--block-devices", DEVICES],
      code: 1,
      notes: [
        /^note: CStorPoolCluster default\/no-namespace is in namespace default, but 8 of the BlockDevices given are in openebs: its devices are looked up in default only, where none are given$/m,
        /^note: CStorPoolCluster default\/no-namespace is in namespace default, but the install runs the node daemon and NDM keeps BlockDevices in openebs/m,
      ],
    },
    {
      name: "a CSPC without a namespace and no --block-devices",
      argv: ["-f", NO_NAMESPACE],
      code: 0,
      notes: [
        /^note: no --block-devices: every device is assumed to exist, be Active, empty, unclaimed and on its pool's node$/m,
      ],
    },
    {
      name: "a refused raid group",
      argv: ["-f", REFUSED, "--block-devices", DEVICES, "--nodes", NODES],
      code: 1,
      notes: [],
    },
    { name: "a CSPC the schema refuses (compression lz)", argv: ["-f", MALFORMED], code: 1, notes: [] },
  ];

  for (const c of cases) {
    it(c.name, async () => {
      const validated = await run(runValidate, c.argv);
      const rendered = await run(runRender, c.argv);
      expect(
        [validated.code, rendered.code],
        validated.stdout + validated.stderr + rendered.stderr,
      ).to.deep.equal([c.code, c.code]);
      expect(rendered.stderr).to.equal(validated.stderr);
      for (const note of c.notes) expect(validated.stderr).to.match(note);

      const validatedJson = await run(runValidate, [...c.argv, "-o", "json"]);
      const renderedJson = await run(runRender, [...c.argv, "-o", "json"]);
      expect(problems(renderedJson.stdout)).to.deep.equal(problems(validatedJson.stdout));
      expect(problems(validatedJson.stdout).length > 0).to.equal(c.code === 1);
    });
  }

  it("both refuse -n that contradicts the CSPC's own namespace, as kubectl does (exit 2)", async () => {
    for (const command of [runValidate, runRender]) {
      const result = await run(command, ["-f", MIRROR, "-n", "default"]);
      expect(result.code).to.equal(2);
      expect(result.stderr).to.match(
        /^error: CStorPoolCluster cstor-pool-mirror has metadata.namespace openebs, not default \(-n\): drop -n, or use -n openebs\n/,
      );
    }
  });
});
