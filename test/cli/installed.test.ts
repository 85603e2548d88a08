// The packed and installed CLI, run as users run it: through the symlinks npm makes (npm install -g, npx from
// the checkout, the kubectl plugin mechanism), from a directory whose path holds a space. The module tests
// import the code; these catch what only the artefact can get wrong (the entry check, the bin paths, the files
// the tarball holds).
import { copyFileSync, lstatSync, mkdirSync, readFileSync, realpathSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { parseAllDocuments } from "yaml";
import { readYaml } from "../support/golden.js";
import { installedBins, installedPackage, REPO, runProgram, type Installed } from "../support/installed.js";

const MIRROR = join(REPO, "metacontroller/samples/cspc-mirror.yaml");
const REFUSED = join(REPO, "test/fixtures/cli/refused-raidz.yaml");
const VERSION = "0.1.0";

describe("cstor-pool as installed from the packed tarball", function () {
  this.timeout(5 * 60_000);
  let installed: Installed;
  let cstorPool: string;

  before(async () => {
    installed = await installedPackage();
    cstorPool = join(installed.bin, "cstor-pool");
  });

  it("ships the built JavaScript and no tests or TypeScript sources", () => {
    expect(installed.files).to.include.members([
      "package.json",
      "dist/cli/cstor-pool.js",
      "dist/node-daemon/main.js",
      "dist/pool-agent/main.js",
      "dist/hooks/main.js",
    ]);
    expect(
      installed.files.filter((f) => f.startsWith("test/") || /\.ts$/.test(f) || f.endsWith(".map")),
    ).to.deep.equal([]);
  });

  it("links cstor-pool and the kubectl plugin kubectl-cstor_pool, each a symlink", () => {
    expect(installedBins(installed)).to.deep.equal(["cstor-pool", "kubectl-cstor_pool"]);
    for (const bin of installedBins(installed))
      expect(lstatSync(join(installed.bin, bin)).isSymbolicLink(), bin).to.equal(true);
  });

  it("prints its help on stdout and exits 0", async () => {
    const run = await runProgram(cstorPool, ["--help"]);
    expect(run.code).to.equal(0);
    expect(run.stdout)
      .to.match(/^Usage: cstor-pool <command>/)
      .and.match(/validate /)
      .and.match(/render /);
    expect(run.stderr).to.equal("");
  });

  it("prints its version", async () => {
    const run = await runProgram(cstorPool, ["--version"]);
    expect([run.code, run.stdout]).to.deep.equal([0, `cstor-pool ${VERSION}\n`]);
  });

  it("validates: exit 0 for an accepted CSPC, 1 for a refused one, 2 for a file that does not exist", async () => {
    const accepted = await runProgram(cstorPool, ["validate", "-f", MIRROR]);
    expect(accepted.code, accepted.stderr).to.equal(0);
    expect(accepted.stdout).to.match(/^CStorPoolCluster openebs\/cstor-pool-mirror: accepted/);
    const refused = await runProgram(cstorPool, ["validate", "-f", REFUSED]);
    expect(refused.code).to.equal(1);
    expect(refused.stdout).to.contain(
      "a raidz raid group needs 3, 5, 9, 17 or 33 block devices (2^n+1), it has 4",
    );
    const missing = await runProgram(cstorPool, ["validate", "-f", "/nonexistent.yaml"]);
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.contain("cannot read /nonexistent.yaml");
  });

  it("converts the old operator's objects read from stdin: the CSPCs on stdout as YAML, exit 0; a refused input names object and field, exit 1, stdout empty", async () => {
    const seed = join(REPO, "test/fixtures/convert/spc-seed-example");
    const run = await runProgram(cstorPool, ["convert", "-f", "-"], {
      input: readFileSync(join(seed, "input.yaml"), "utf8"),
    });
    expect(run.code, run.stderr).to.equal(0);
    const expected = (readYaml(join(seed, "output.yaml")) as { cspcs: unknown[] }).cspcs;
    expect(parseAllDocuments(run.stdout).map((d) => d.toJS() as unknown)).to.deep.equal(expected);
    expect(run.stderr).to.match(
      /^note: CStorPoolCluster openebs\/pool1: adopt the BlockDeviceClaims of its 3 block device/m,
    );
    const refused = await runProgram(cstorPool, [
      "convert",
      "-f",
      join(REPO, "test/fixtures/convert/refused-v1-unknown-raid-type/input.yaml"),
    ]);
    expect(refused.code).to.equal(1);
    expect(refused.stdout).to.equal("");
    expect(refused.stderr).to.contain(
      'error: CStorPoolCluster openebs/cspc-odd: spec.pools[0].poolConfig.dataRaidGroupType: spec.pools[0].poolConfig.dataRaidGroupType "raid5" is not a raid type',
    );
  });

  it("reads files whose path holds a space, from a working directory whose path holds one", async () => {
    const dir = join(installed.root, "my pools");
    mkdirSync(dir, { recursive: true });
    copyFileSync(MIRROR, join(dir, "cspc mirror.yaml"));
    const run = await runProgram(
      cstorPool,
      [
        "render",
        "-f",
        "cspc mirror.yaml",
        "--block-devices",
        join(REPO, "test/fixtures/render/mirror/blockdevices.yaml"),
      ],
      { cwd: dir },
    );
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.match(
      /^# CStorPoolCluster openebs\/cstor-pool-mirror: 2 pool\(s\), 2 would be provisioned/,
    );
  });

  it("runs through a symlink of a symlink, as node_modules/.bin links to a linked package", async () => {
    const link = join(installed.root, "links", "cstor-pool");
    mkdirSync(join(installed.root, "links"), { recursive: true });
    symlinkSync(cstorPool, link);
    expect(realpathSync(link)).to.match(/dist\/cli\/cstor-pool\.js$/);
    const run = await runProgram(link, ["validate", "-f", REFUSED]);
    expect(run.code).to.equal(1);
  });

  it("starts the node daemon's entry point through a symlink (it stops at the missing NODE_NAME, exit 1)", async () => {
    const main = join(
      installed.bin,
      "..",
      "lib",
      "node_modules",
      "cstor-pool-operator",
      "dist",
      "node-daemon",
      "main.js",
    );
    const link = join(installed.root, "node daemon main.js");
    symlinkSync(main, link);
    const env = { ...process.env };
    delete env.NODE_NAME;
    const run = await runProgram(process.execPath, [link], { env });
    expect(run.code).to.equal(1);
    expect(run.stderr).to.contain("NODE_NAME is not set");
  });

  it("is a kubectl plugin: `kubectl plugin list` finds it and `kubectl cstor-pool` runs it", async () => {
    const env = { ...process.env, PATH: `${installed.bin}:${process.env.PATH}` };
    const list = await runProgram("kubectl", ["plugin", "list"], { env });
    expect(list.stdout).to.contain(join(installed.bin, "kubectl-cstor_pool"));
    const help = await runProgram("kubectl", ["cstor-pool", "--help"], { env });
    expect(help.code).to.equal(0);
    expect(help.stdout).to.match(/^Usage: kubectl cstor-pool <command>/);
    const refused = await runProgram("kubectl", ["cstor-pool", "validate", "-f", REFUSED], { env });
    expect(refused.code).to.equal(1);
    expect(refused.stdout).to.contain("refused");
  });

  it("runs as `npx cstor-pool` from the checkout", async () => {
    // npx links the checkout into its cache and runs the bin through that link; its cache is kept apart.
    const env = {
      ...process.env,
      npm_config_cache: join(installed.root, "npm-cache"),
      npm_config_update_notifier: "false",
    };
    const help = await runProgram("npx", ["--no-install", "cstor-pool", "--help"], { cwd: REPO, env });
    expect(help.code, help.stderr).to.equal(0);
    expect(help.stdout).to.match(/^Usage: cstor-pool <command>/);
    const missing = await runProgram(
      "npx",
      ["--no-install", "cstor-pool", "validate", "-f", "/nonexistent.yaml"],
      { cwd: REPO, env },
    );
    expect(missing.code).to.equal(2);
  });
});
