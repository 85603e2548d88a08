import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { expect } from "chai";

const run = promisify(execFile);
const CLI = ["--import", "tsx", "cli/cstor-pool.ts"];

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...CLI, ...args], {
      cwd: new URL("../..", import.meta.url).pathname,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("cstor-pool CLI", () => {
  it("lists its commands with --help", async () => {
    const { code, stdout } = await cli(["--help"]);
    expect(code).to.equal(0);
    expect(stdout)
      .to.match(/validate .*admission webhook/)
      .and.match(/render .*CSPIs/)
      .and.match(/node-daemon /);
  });

  it("refuses an unknown command with exit code 2, a suggestion and the usage", async () => {
    const { code, stdout, stderr } = await cli(["valdate", "-f", "x.yaml"]);
    expect([code, stdout]).to.deep.equal([2, ""]);
    expect(stderr).to.match(
      /^error: unknown command "valdate" \(did you mean validate\?\)\n\nUsage: cstor-pool <command>/,
    );
  });

  it("without a command: the usage on stderr, exit 2", async () => {
    const { code, stdout, stderr } = await cli([]);
    expect([code, stdout]).to.deep.equal([2, ""]);
    expect(stderr).to.match(/^error: no command given\n\nUsage: cstor-pool <command>/);
  });

  it("prints the package's version with --version", async () => {
    const { code, stdout } = await cli(["--version"]);
    const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    expect([code, stdout]).to.deep.equal([0, `cstor-pool ${version}\n`]);
  });

  it("documents the exit codes in its help and each command's", async () => {
    for (const args of [["--help"], ["validate", "--help"], ["render", "--help"]]) {
      const { code, stdout } = await cli(args);
      expect(code).to.equal(0);
      expect(stdout).to.contain(
        "Exit codes: 0 ok (accepted, or every pool renders), 1 refused (some pool would not be built), 2 usage error or unreadable input.",
      );
    }
  });

  it("dispatches validate and render to their modules, passing the arguments through", async () => {
    const validate = await cli(["validate", "-f", "metacontroller/samples/cspc-mirror.yaml"]);
    expect(validate.code).to.equal(0);
    expect(validate.stdout).to.match(/^CStorPoolCluster openebs\/cstor-pool-mirror: accepted/);
    const render = await cli(["render", "-f", "metacontroller/samples/cspc-mirror.yaml"]);
    expect(render.stdout).to.match(/^# CStorPoolCluster openebs\/cstor-pool-mirror: 2 pool\(s\)/);
  });
});
