// Local mode, as a person runs it: `cstor-pool node-daemon --cspi-file cspi.yaml --once [--dry-run]`.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { parse, stringify } from "yaml";
import { zpoolName } from "../../lib/names.js";
import type { CSPI } from "../../api/types.js";
import { LOCAL_EXIT, runNodeDaemonCommand } from "../../node-daemon/local.js";
import { parseZpoolStatus } from "../../zfs/parse.js";
import { cspiFor, requireZfs, SANDBOX_DEVICE_ROOTS, zpool, ZfsSandbox } from "../../testkit/zfs.js";

/** The command as run on a machine whose devices are the sandboxes' sparse files (DEVICE_ROOTS). */
async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const env = { ...process.env, DEVICE_ROOTS: JSON.stringify(SANDBOX_DEVICE_ROOTS) };
  const code = await runNodeDaemonCommand(argv, {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    env,
  });
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
    writeFileSync(
      file,
      stringify(
        cspiFor(name, "this-node", [{ type: "mirror", devices: [sandbox.file("d1"), sandbox.file("d2")] }]),
      ),
    );

    const dry = await run(["--cspi-file", file, "--once", "--dry-run"]);
    expect(dry.code, "would change").to.equal(LOCAL_EXIT.changed);
    const planned = parse(dry.stdout) as {
      plan: { action: string; description: string }[];
      status?: unknown;
    };
    expect(planned.plan.map((p) => p.action)).to.deep.equal(["create"]);
    expect(planned.plan[0].description).to.contain(zpoolName(name));
    expect(planned.status).to.equal(undefined);
    expect(parseZpoolStatus(zpool("status")).map((p) => p.name)).to.not.include(zpoolName(name));

    const applied = await run(["--cspi-file", file, "--once"]);
    expect(applied.code, "changed").to.equal(LOCAL_EXIT.changed);
    const result = parse(applied.stdout) as {
      outcome: string;
      applied: { action: string; result: string }[];
      status: { phase: string; importedOn: string };
    };
    expect(result.outcome).to.equal("changed");
    expect(result.applied).to.deep.equal([{ action: "create", result: "done" }]);
    expect(result.status).to.include({ phase: "ONLINE", importedOn: "this-node" });
    expect(applied.stderr).to.equal(
      `changed: ${(parse(applied.stdout) as { plan: { description: string }[] }).plan[0].description}\n`,
    );

    const again = await run(["--cspi-file", file, "--once"]);
    expect(again.code, "converged").to.equal(LOCAL_EXIT.converged);
    expect((parse(again.stdout) as { outcome: string; plan: unknown[] }).plan).to.deep.equal([]);
    expect(again.stderr).to.equal(
      `converged: pool ${zpoolName(name)} matches the CStorPoolInstance, nothing to do\n`,
    );
  });

  describe("held: nothing done, exit code 4, each hold printed", () => {
    async function held(cspi: CSPI, reason: string, says: string): Promise<void> {
      const file = join(sandbox.dir, `${cspi.metadata.name}.yaml`);
      writeFileSync(file, stringify(cspi));
      const result = await run(["--cspi-file", file, "--once"]);
      expect(result.code, result.stdout + result.stderr).to.equal(LOCAL_EXIT.held);
      const report = parse(result.stdout) as {
        outcome: string;
        applied: unknown[];
        holds: { reason: string; message: string }[];
      };
      expect(report.outcome).to.equal("held");
      expect(report.applied).to.deep.equal([]);
      expect(report.holds.map((h) => h.reason)).to.deep.equal([reason]);
      expect(report.holds[0].message).to.contain(says);
      expect(result.stderr).to.equal(`held: nothing done\n  ${reason}: ${report.holds[0].message}\n`);
    }

    it("a device that does not exist", async () => {
      const missing = join(sandbox.dir, "missing");
      await held(
        cspiFor(sandbox.name("missing"), "this-node", [{ type: "stripe", devices: [missing] }]),
        "DeviceMissing",
        `(${missing}) does not exist on this node`,
      );
      expect(parseZpoolStatus(zpool("status")).map((p) => p.name)).to.not.include(
        zpoolName(sandbox.name("missing")),
      );
    });

    it("devices that belong to another pool", async () => {
      const device = sandbox.file("shared");
      const other = `cstor-other-${sandbox.id}`;
      zpool("create", other, device);
      await held(
        cspiFor(sandbox.name("taken"), "this-node", [{ type: "stripe", devices: [device] }]),
        "DeviceInUse",
        `belongs to imported pool ${other}`,
      );
    });

    it("a device below ZFS's 64 MiB minimum: no zpool create is tried", async () => {
      const small = sandbox.file("small", 32);
      await held(
        cspiFor(sandbox.name("small"), "this-node", [{ type: "stripe", devices: [small] }]),
        "DeviceTooSmall",
        "holds 33554432 bytes (32 MiB); ZFS needs at least 64 MiB",
      );
    });

    it("a raid group type that no longer matches the real pool: UnsupportedChange", async () => {
      const name = sandbox.name("shape");
      const devices = [sandbox.file("m1"), sandbox.file("m2")];
      const file = join(sandbox.dir, "shape.yaml");
      writeFileSync(file, stringify(cspiFor(name, "this-node", [{ type: "mirror", devices }])));
      expect((await run(["--cspi-file", file, "--once"])).code).to.equal(LOCAL_EXIT.changed);
      await held(
        cspiFor(name, "this-node", [{ type: "stripe", devices }]),
        "UnsupportedChange",
        `which the pool has in mirror-0: ZFS cannot convert a raid group`,
      );
    });
  });

  it("a hot spare at work in a mirror is still the spare group's: no UnsupportedChange", async () => {
    const name = sandbox.name("spare");
    const [d1, d2, spare] = [sandbox.file("s-d1"), sandbox.file("s-d2"), sandbox.file("s-spare")];
    const file = join(sandbox.dir, "spare.yaml");
    writeFileSync(
      file,
      stringify(
        cspiFor(name, "this-node", [
          { type: "mirror", devices: [d1, d2] },
          { role: "spare", devices: [spare] },
        ]),
      ),
    );
    expect((await run(["--cspi-file", file, "--once"])).code).to.equal(LOCAL_EXIT.changed);
    zpool("replace", zpoolName(name), d2, spare);
    expect(zpool("status", zpoolName(name))).to.match(/spare-1/);
    const result = await run(["--cspi-file", file, "--once", "--dry-run"]);
    expect(
      (parse(result.stdout) as { holds: { reason: string }[] }).holds.map((h) => h.reason),
    ).to.not.include("UnsupportedChange");
  });

  it("a raid group ZFS cannot build (raidz of one device): exit 1, InvalidSpec naming the group and the minimum, no zpool create", async () => {
    const name = sandbox.name("raidz1dev");
    const file = join(sandbox.dir, "raidz.yaml");
    writeFileSync(
      file,
      stringify(cspiFor(name, "this-node", [{ type: "raidz", devices: [sandbox.file("r1")] }])),
    );
    const result = await run(["--cspi-file", file, "--once"]);
    expect(result.code).to.equal(LOCAL_EXIT.failed);
    const report = parse(result.stdout) as {
      applied: unknown[];
      holds: { reason: string; message: string }[];
    };
    expect(report.applied).to.deep.equal([]);
    expect(report.holds).to.deep.equal([
      {
        reason: "InvalidSpec",
        message: `CStorPoolInstance openebs/${name}: spec.raidGroups[0] (raidz: bd-r1): ZFS builds a raidz group of at least 2 devices, it has 1: fix the raid group in the CSPC`,
      },
    ]);
  });

  it("refuses an unsafe devLink with a message naming the field, and runs nothing", async () => {
    const file = join(sandbox.dir, "bad.yaml");
    writeFileSync(
      file,
      stringify(
        cspiFor(sandbox.name("bad"), "this-node", [{ type: "stripe", devices: ["/dev/sda; rm -rf /"] }]),
      ),
    );
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
