// Every value the node daemon puts into a zpool argument comes from a CSPI: device paths (devLink), the pool
// name (from metadata.name) and the cachefile. Hostile or broken values are refused by node-daemon/validate.ts
// with a message naming the object, the field and the fix, before any command runs.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import fc from "fast-check";
import { stringify } from "yaml";
import type { CSPI } from "../../api/types.js";
import { zpoolName } from "../../lib/names.js";
import { runNodeDaemonCommand } from "../../node-daemon/local.js";
import { cspiProblems, pathProblem } from "../../node-daemon/validate.js";
import { FaultyCommand } from "../reliability/support/faulty-zpool.js";
import { tally } from "../reliability/support/tally.js";
import { cspiFor, requireZfs, ZfsSandbox } from "../support/zfs.js";

const SAFE_DEVICE_PATH = /^(\/[A-Za-z0-9._:+@,=-]+)+$/;
const DNS_1123 = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** Device paths that must never reach a command, and what the refusal says about each. */
const HOSTILE_PATHS: [string, RegExp][] = [
  ["/dev/sda; rm -rf /", /may only contain/],
  ["/dev/sda && reboot", /may only contain/],
  ["/dev/sda | tee /etc/passwd", /may only contain/],
  ["/dev/$(reboot)", /may only contain/],
  ["/dev/`id`", /may only contain/],
  ["/dev/sda\n-f", /may only contain/],
  ["/dev/sda\u0000/x", /may only contain/],
  ["/dev/sd a", /may only contain/],
  ["/dev/sda'", /may only contain/],
  ["/dev/sda*", /may only contain/],
  ["/dev/\u0455da", /may only contain/],
  ["../../etc", /must be an absolute path/],
  ["dev/sda", /must be an absolute path/],
  ["-f", /must be an absolute path/],
  ["", /must be an absolute path/],
  ["~/disk", /must be an absolute path/],
  ["/dev/../etc/shadow", /must not contain \. or \.\. components/],
  ["/dev/disk/by-id/../../../etc", /must not contain \. or \.\. components/],
  ["/dev/./sda", /must not contain \. or \.\. components/],
  ["/dev//sda", /may only contain/],
  ["/dev/sda/", /may only contain/],
];

const HOSTILE_NAMES = ["pool; rm -rf /", "../pool", "-f", "Pool", "pool name", "pool/child", "pool$(id)", "", "p".repeat(201)];

function cspiWith(devLink: string, name = "safe-pool"): CSPI {
  return cspiFor(name, "node-1", [{ type: "stripe", devices: [devLink] }]);
}

describe("security: device paths and pool names are validated before any command", () => {
  for (const [path, says] of HOSTILE_PATHS) {
    it(`refuses devLink ${JSON.stringify(path)} saying it ${says.source.replace(/\\/g, "")}`, () => {
      expect(pathProblem(path)).to.match(says);
      const cspi = cspiWith(path);
      const device = cspi.spec.raidGroups[0]!.blockDevices[0]!.blockDeviceName;
      const problems = cspiProblems(cspi);
      expect(problems, "one refusal naming the object, the field, the value and the fix").to.have.length(1);
      expect(problems[0]).to.equal(
        path === ""
          ? `CStorPoolInstance openebs/safe-pool: spec.raidGroups[0].blockDevices[0] (${device}) has no devLink: the BlockDevice needs spec.path or devlinks`
          : `CStorPoolInstance openebs/safe-pool: spec.raidGroups[0].blockDevices[0].devLink ${JSON.stringify(path)} ${pathProblem(path)}: fix the BlockDevice ${device}`,
      );
    });
  }

  it("refuses CSPI names that cannot name a zpool, and the same devLink twice", () => {
    for (const name of HOSTILE_NAMES) {
      const problems = cspiProblems(cspiWith("/dev/sdb", name));
      expect(problems.some((p) => p.includes("metadata.name must be a DNS-1123 name")), JSON.stringify(name)).to.equal(true);
    }
    const twice = cspiFor("twice", "node-1", [{ type: "mirror", devices: ["/dev/sdb", "/dev/sdb"] }]);
    expect(cspiProblems(twice)).to.deep.equal([
      "CStorPoolInstance openebs/twice: spec.raidGroups[0].blockDevices[1].devLink /dev/sdb is also the devLink of spec.raidGroups[0].blockDevices[0] (bd-sdb): each device may appear once",
    ]);
    tally.badInputs("CSPI device paths and pool names (listed)", HOSTILE_PATHS.length + HOSTILE_NAMES.length + 1);
  });

  it("accepts only absolute paths of plain characters without . or .. components, whatever the string (fast-check)", () => {
    const alphabet = fc.constantFrom(..."/abc.-_:+@,=01 ;|&$`'\"\\\n\t*?()[]{}<>!~#%^\u0000\u00e9\u0455".split(""));
    let tried = 0;
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: alphabet, maxLength: 40 }), fc.string({ unit: "binary", maxLength: 40 }), fc.string()), (path) => {
        tried++;
        const refused = cspiProblems(cspiWith(path)).length > 0;
        const safe = SAFE_DEVICE_PATH.test(path) && !path.split("/").some((part) => part === "." || part === "..");
        expect(refused, JSON.stringify(path)).to.equal(!safe);
      }),
      { numRuns: 3000, seed: 20261121 },
    );
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: alphabet, maxLength: 30 }), fc.string()), (name) => {
        tried++;
        const refused = cspiProblems(cspiWith("/dev/sdb", name)).length > 0;
        if (!refused) {
          expect(name).to.match(DNS_1123);
          expect(zpoolName(name)).to.match(/^cstor-[a-z0-9]/);
        }
      }),
      { numRuns: 2000, seed: 20261121 },
    );
    tally.badInputs("CSPI device paths and pool names (fast-check strings)", tried);
  });

  describe("the daemon runs nothing for a CSPI it refuses (local mode, zpool behind a recording wrapper)", function () {
    this.timeout(30_000);
    let sandbox: ZfsSandbox;
    before(() => {
      requireZfs();
      sandbox = new ZfsSandbox();
    });
    after(() => sandbox?.cleanup());

    for (const devLink of ["/dev/sda; touch MARKER", "/dev/$(touch MARKER)", "../../etc", "/dev/../etc/shadow"]) {
      it(`devLink ${JSON.stringify(devLink)}: exit 1, InvalidSpec naming the field, no zpool argument carries it, nothing executed`, async () => {
        const marker = join(sandbox.dir, "pwned");
        const recording = new FaultyCommand(sandbox.dir, "/usr/sbin/zpool");
        const path = devLink.replace("MARKER", marker);
        const file = join(sandbox.dir, "hostile.yaml");
        writeFileSync(file, stringify(cspiWith(path, sandbox.name("hostile"))));
        let stdout = "";
        const code = await runNodeDaemonCommand(["--cspi-file", file, "--once"], {
          stdout: (t) => (stdout += t),
          stderr: (t) => (stdout += t),
          env: { ...process.env, ZPOOL_BIN: recording.path, ZFS_COMMAND_PREFIX: "" },
        });
        expect(code).to.equal(1);
        expect(stdout).to.contain("InvalidSpec").and.contain("spec.raidGroups[0].blockDevices[0].devLink");
        const ran = recording.invocations();
        expect(ran, "zpool is reached through the recording wrapper").to.include("status");
        expect(ran.filter((argv) => argv.includes(path) || /create|add|replace|labelclear|import/.test(argv)), `commands: ${ran.join(" | ")}`).to.deep.equal([]);
        expect(existsSync(marker), "no shell ever saw the devLink").to.equal(false);
      });
    }
  });
});
