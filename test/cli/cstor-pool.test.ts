import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect } from "chai";

const run = promisify(execFile);
const CLI = ["--import", "tsx", "cli/cstor-pool.ts"];

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...CLI, ...args], { cwd: new URL("../..", import.meta.url).pathname });
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
    expect(stdout).to.match(/validate .*admission webhook/).and.match(/render .*CSPIs/).and.match(/node-daemon /);
  });

  it("refuses an unknown command with exit code 2 and the usage", async () => {
    const { code, stderr } = await cli(["frobnicate"]);
    expect(code).to.equal(2);
    expect(stderr).to.match(/unknown command "frobnicate"/);
  });

  it("dispatches validate and render to their modules, passing the arguments through", async () => {
    const validate = await cli(["validate", "-f", "metacontroller/samples/cspc-mirror.yaml"]);
    expect(validate.code).to.equal(0);
    expect(validate.stdout).to.match(/^CStorPoolCluster openebs\/cstor-pool-mirror: accepted/);
    const render = await cli(["render", "-f", "metacontroller/samples/cspc-mirror.yaml"]);
    expect(render.stdout).to.match(/^# CStorPoolCluster openebs\/cstor-pool-mirror: 2 pool\(s\)/);
  });
});
