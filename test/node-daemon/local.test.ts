// Local mode, as a person runs it: `cstor-pool node-daemon --cspi-file cspi.yaml --once [--dry-run]`.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { parse, stringify } from "yaml";
import { zpoolName } from "../../lib/names.js";
import { runNodeDaemonCommand } from "../../node-daemon/local.js";
import { parseZpoolStatus } from "../../node-daemon/parse.js";
import { cspiFor, requireZfs, SANDBOX_DEVICE_ROOTS, zpool, ZfsSandbox } from "../support/zfs.js";

/** The command as run on a machine whose devices are the sandboxes' sparse files (DEVICE_ROOTS). */
async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const env = { ...process.env, DEVICE_ROOTS: JSON.stringify(SANDBOX_DEVICE_ROOTS) };
  const code = await runNodeDaemonCommand(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), env });
  return { code, stdout, stderr };
}

describe("node-daemon local mode", function () {
  this.timeout(30_000);
  let sandbox: ZfsSandbox;
  before(() => requireZfs());
  beforeEach(() => {
    sandbox = new ZfsSandbox();
  });
  afterEach(() => sandbox.cleanup());

  it("--dry-run prints the plan and changes nothing; without it, applies and prints the status", async () => {
    const name = sandbox.name("local");
    const file = join(sandbox.dir, "cspi.yaml");
    writeFileSync(file, stringify(cspiFor(name, "this-node", [{ type: "mirror", devices: [sandbox.file("d1"), sandbox.file("d2")] }])));

    const dry = await run(["--cspi-file", file, "--once", "--dry-run"]);
    expect(dry.code).to.equal(0);
    const planned = parse(dry.stdout) as { plan: { action: string; description: string }[]; status?: unknown };
    expect(planned.plan.map((p) => p.action)).to.deep.equal(["create"]);
    expect(planned.plan[0]!.description).to.contain(zpoolName(name));
    expect(planned.status).to.equal(undefined);
    expect(parseZpoolStatus(zpool("status")).map((p) => p.name)).to.not.include(zpoolName(name));

    const applied = await run(["--cspi-file", file, "--once"]);
    expect(applied.code).to.equal(0);
    const result = parse(applied.stdout) as { applied: { action: string; result: string }[]; status: { phase: string; importedOn: string } };
    expect(result.applied).to.deep.equal([{ action: "create", result: "done" }]);
    expect(result.status).to.include({ phase: "ONLINE", importedOn: "this-node" });
  });

  it("refuses an unsafe devLink with a message naming the field, and runs nothing", async () => {
    const file = join(sandbox.dir, "bad.yaml");
    writeFileSync(file, stringify(cspiFor(sandbox.name("bad"), "this-node", [{ type: "stripe", devices: ["/dev/sda; rm -rf /"] }])));
    const result = await run(["--cspi-file", file, "--once"]);
    expect(result.code).to.equal(1);
    expect(result.stdout).to.contain("spec.raidGroups[0].blockDevices[0].devLink").and.contain("InvalidSpec");
  });

  it("explains usage errors", async () => {
    const result = await run(["--cspi-file", "x.yaml"]);
    expect(result.code).to.equal(2);
    expect(result.stderr).to.contain("--once is required");
  });
});
