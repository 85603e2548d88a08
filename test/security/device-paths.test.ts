// Every value the node daemon puts into a zpool argument comes from a CSPI: device paths (devLink), the pool
// name (from metadata.name) and the cachefile. Hostile or broken values are refused by node-daemon/validate.ts
// with a message naming the object, the field and the fix, before any command runs. Device paths must also lie
// under the daemon's device roots (/dev/ unless DEVICE_ROOTS says otherwise): the daemon runs privileged and
// zeroes the label areas of a removed pool's devices.
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import fc from "fast-check";
import { parse, stringify } from "yaml";
import type { CSPI } from "../../api/types.js";
import { zpoolName } from "../../lib/names.js";
import { LOCAL_EXIT, runNodeDaemonCommand } from "../../node-daemon/local.js";
import {
  cspiProblems,
  DEFAULT_DEVICE_ROOTS,
  deviceRootsFromEnv,
  pathProblem,
} from "../../node-daemon/validate.js";
import { FaultyCommand } from "../reliability/support/faulty-zpool.js";
import { tally } from "../reliability/support/tally.js";
import { REPO_ROOT } from "../../testkit/kube.js";
import { cspiFor, MiB, requireZfs, zpool, ZfsSandbox } from "../../testkit/zfs.js";

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

/** Well-formed absolute paths outside /dev/: the daemon must not zero labels there. */
const OUTSIDE_DEVICE_ROOTS = [
  "/var/lib/etcd/member/snap/db",
  "/etc/shadow",
  "/root/.ssh/authorized_keys",
  "/boot/vmlinuz",
  "/proc/kcore",
  "/sys/firmware/efi/efivars/x",
  "/var/openebs/sparse/disk0",
  "/devil/sda",
  "/dev",
  "/tmp/disk",
];

const HOSTILE_NAMES = [
  "pool; rm -rf /",
  "../pool",
  "-f",
  "Pool",
  "pool name",
  "pool/child",
  "pool$(id)",
  "",
  "p".repeat(201),
];

function cspiWith(devLink: string, name = "safe-pool"): CSPI {
  return cspiFor(name, "node-1", [{ type: "stripe", devices: [devLink] }]);
}

describe("security: device paths and pool names are validated before any command", () => {
  for (const [path, says] of HOSTILE_PATHS) {
    it(`refuses devLink ${JSON.stringify(path)} saying it ${says.source.replace(/\\/g, "")}`, () => {
      expect(pathProblem(path)).to.match(says);
      const cspi = cspiWith(path);
      const device = cspi.spec.raidGroups[0].blockDevices[0].blockDeviceName;
      const problems = cspiProblems(cspi, DEFAULT_DEVICE_ROOTS);
      expect(problems, "one refusal naming the object, the field, the value and the fix").to.have.length(1);
      expect(problems[0]).to.equal(
        path === ""
          ? `CStorPoolInstance openebs/safe-pool: spec.raidGroups[0].blockDevices[0] (${device}) has no devLink: the BlockDevice needs spec.path or devlinks`
          : `CStorPoolInstance openebs/safe-pool: spec.raidGroups[0].blockDevices[0].devLink ${JSON.stringify(path)} ${pathProblem(path)}: fix the BlockDevice ${device}`,
      );
    });
  }

  for (const path of OUTSIDE_DEVICE_ROOTS) {
    it(`refuses devLink ${path} outside the device roots, naming the CSPI, the device and the roots`, () => {
      expect(pathProblem(path), "a well-formed path").to.equal(undefined);
      const device = cspiWith(path).spec.raidGroups[0].blockDevices[0].blockDeviceName;
      expect(cspiProblems(cspiWith(path), DEFAULT_DEVICE_ROOTS)).to.deep.equal([
        `CStorPoolInstance openebs/safe-pool: spec.raidGroups[0].blockDevices[0].devLink ${path} (${device}) is outside the node daemon's device roots (/dev/), ` +
          `the only places it touches: fix the BlockDevice ${device}, or add its directory to DEVICE_ROOTS of the node daemon`,
      ]);
      expect(
        cspiProblems(cspiWith("/dev/disk/by-id/ata-x"), DEFAULT_DEVICE_ROOTS),
        "the same CSPI on a device under /dev/",
      ).to.deep.equal([]);
    });
  }

  it("DEVICE_ROOTS: /dev/ when unset; absolute directories as a JSON array; anything else refused at start-up with the fix", () => {
    expect(deviceRootsFromEnv(undefined)).to.deep.equal(["/dev/"]);
    expect(deviceRootsFromEnv('["/dev", "/var/openebs/sparse/"]')).to.deep.equal([
      "/dev/",
      "/var/openebs/sparse/",
    ]);
    expect(
      cspiProblems(
        cspiWith("/var/openebs/sparse/disk0"),
        deviceRootsFromEnv('["/dev", "/var/openebs/sparse"]'),
      ),
    ).to.deep.equal([]);
    // A root is a directory: /var/openebs/sparse does not let /var/openebs/sparse-other through.
    expect(
      cspiProblems(
        cspiWith("/var/openebs/sparse-other/disk0"),
        deviceRootsFromEnv('["/var/openebs/sparse"]'),
      )[0],
    ).to.contain("outside the node daemon's device roots (/var/openebs/sparse/)");
    const usage =
      'DEVICE_ROOTS must be a JSON array of absolute directories that hold the node\'s devices, e.g. ["/dev/"]';
    for (const [value, says] of [
      ["/dev", `${usage}; got /dev`],
      ["{}", `${usage}; got {}`],
      ["[]", `${usage}; got []`],
      ["[1]", `${usage}; got [1]`],
      ['["dev"]', 'DEVICE_ROOTS entry "dev" must be an absolute path'],
      ['["/dev/../etc"]', 'DEVICE_ROOTS entry "/dev/../etc" must not contain . or .. components'],
      [
        '["/dev/sd a"]',
        'DEVICE_ROOTS entry "/dev/sd a" may only contain letters, digits and . _ : + @ , = - between slashes',
      ],
      [
        '["/"]',
        'DEVICE_ROOTS entry "/" would let the daemon touch any path: list the directories that hold the node\'s devices, e.g. ["/dev/"]',
      ],
    ] as const) {
      expect(() => deviceRootsFromEnv(value), value).to.throw(says);
    }
    tally.badInputs("DEVICE_ROOTS values", 8);
  });

  it("refuses CSPI names that cannot name a zpool, and the same devLink twice", () => {
    for (const name of HOSTILE_NAMES) {
      const problems = cspiProblems(cspiWith("/dev/sdb", name), DEFAULT_DEVICE_ROOTS);
      expect(
        problems.some((p) => p.includes("metadata.name must be a DNS-1123 name")),
        JSON.stringify(name),
      ).to.equal(true);
    }
    const twice = cspiFor("twice", "node-1", [{ type: "mirror", devices: ["/dev/sdb", "/dev/sdb"] }]);
    expect(cspiProblems(twice, DEFAULT_DEVICE_ROOTS)).to.deep.equal([
      "CStorPoolInstance openebs/twice: spec.raidGroups[0].blockDevices[1].devLink /dev/sdb is also the devLink of spec.raidGroups[0].blockDevices[0] (bd-sdb): each device may appear once",
    ]);
    tally.badInputs(
      "CSPI device paths and pool names (listed)",
      HOSTILE_PATHS.length + OUTSIDE_DEVICE_ROOTS.length + HOSTILE_NAMES.length + 1,
    );
  });

  it("accepts only absolute paths of plain characters without . or .. components under a device root, whatever the string (fast-check)", () => {
    const alphabet = fc.constantFrom(
      ..."/abc.-_:+@,=01 ;|&$`'\"\\\n\t*?()[]{}<>!~#%^\u0000\u00e9\u0455".split(""),
    );
    const roots = ["/dev/", "/a/"];
    // Prefixes so that many strings start at or near a root.
    const prefix = fc.constantFrom("", "/dev/", "/a/", "/dev", "/a", "/devx/", "/ab/", "/dev/../", "/a/./");
    let tried = 0;
    fc.assert(
      fc.property(
        prefix,
        fc.oneof(
          fc.string({ unit: alphabet, maxLength: 40 }),
          fc.string({ unit: "binary", maxLength: 40 }),
          fc.string(),
        ),
        (start, rest) => {
          tried++;
          const path = start + rest;
          const refused = cspiProblems(cspiWith(path), roots).length > 0;
          const safe =
            SAFE_DEVICE_PATH.test(path) && !path.split("/").some((part) => part === "." || part === "..");
          const under = roots.some((root) => path.startsWith(root));
          expect(refused, JSON.stringify(path)).to.equal(!(safe && under));
        },
      ),
      { numRuns: 3000, seed: 20261121 },
    );
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: alphabet, maxLength: 30 }), fc.string()), (name) => {
        tried++;
        const refused = cspiProblems(cspiWith("/dev/sdb", name), DEFAULT_DEVICE_ROOTS).length > 0;
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

    for (const devLink of [
      "/dev/sda; touch MARKER",
      "/dev/$(touch MARKER)",
      "../../etc",
      "/dev/../etc/shadow",
    ]) {
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
        expect(code).to.equal(LOCAL_EXIT.failed);
        expect(stdout).to.contain("InvalidSpec").and.contain("spec.raidGroups[0].blockDevices[0].devLink");
        const ran = recording.invocations();
        expect(ran, "zpool is reached through the recording wrapper").to.include("status");
        expect(
          ran.filter((argv) => argv.includes(path) || /create|add|replace|labelclear|import/.test(argv)),
          `commands: ${ran.join(" | ")}`,
        ).to.deep.equal([]);
        expect(existsSync(marker), "no shell ever saw the devLink").to.equal(false);
      });
    }

    it("a real file outside the device roots: exit 1, InvalidSpec naming the CSPI, the device and the roots, no zpool argument carries it; allowed through DEVICE_ROOTS", async () => {
      const recording = new FaultyCommand(sandbox.dir, "/usr/sbin/zpool");
      const device = sandbox.file("outside", 64);
      const cspi = cspiWith(device, sandbox.name("outside"));
      const file = join(sandbox.dir, "outside.yaml");
      writeFileSync(file, stringify(cspi));
      const run = async (env: NodeJS.ProcessEnv) => {
        let stdout = "";
        const code = await runNodeDaemonCommand(["--cspi-file", file, "--once"], {
          stdout: (t) => (stdout += t),
          stderr: () => undefined,
          env,
        });
        return { code, stdout };
      };
      const env: NodeJS.ProcessEnv = { ...process.env, ZPOOL_BIN: recording.path, ZFS_COMMAND_PREFIX: "" };
      delete env.DEVICE_ROOTS;

      const refused = await run(env);
      expect(refused.code).to.equal(LOCAL_EXIT.failed);
      const holds = (parse(refused.stdout) as { holds: { reason: string; message: string }[] }).holds;
      expect(holds).to.deep.equal([
        {
          reason: "InvalidSpec",
          message:
            `CStorPoolInstance openebs/${cspi.metadata.name}: spec.raidGroups[0].blockDevices[0].devLink ${device} (bd-outside) is outside the node daemon's device roots (/dev/), ` +
            "the only places it touches: fix the BlockDevice bd-outside, or add its directory to DEVICE_ROOTS of the node daemon",
        },
      ]);
      expect(
        recording.invocations().filter((argv) => argv.includes(device) || argv.includes(sandbox.dir)),
        "zpool arguments",
      ).to.deep.equal([]);
      expect(
        readFileSync(device).every((byte) => byte === 0),
        "the device file untouched",
      ).to.equal(true);

      const allowed = await run({ ...env, DEVICE_ROOTS: JSON.stringify([sandbox.dir]) });
      expect(allowed.code, allowed.stdout).to.equal(LOCAL_EXIT.changed);
      expect(zpool("list", "-H", "-o", "name")).to.contain(zpoolName(cspi.metadata.name!));
    });

    /** A directory that is the daemon's only device root, and a file with data outside it. */
    function linkedOutside(label: string): {
      roots: string;
      link: string;
      victim: string;
      sha: () => string;
    } {
      const roots = join(sandbox.dir, `roots-${label}`);
      mkdirSync(roots);
      const victim = sandbox.file(`victim-${label}`, 128);
      writeFileSync(victim, randomBytes(MiB), { flag: "r+" });
      const link = join(roots, "disk0");
      symlinkSync(victim, link);
      return {
        roots,
        link,
        victim,
        sha: () => createHash("sha256").update(readFileSync(victim)).digest("hex"),
      };
    }

    async function localRun(file: string, env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string }> {
      let stdout = "";
      const code = await runNodeDaemonCommand(["--cspi-file", file, "--once"], {
        stdout: (t) => (stdout += t),
        stderr: () => undefined,
        env,
      });
      return { code, stdout };
    }

    it("a symlink under the device root that leads outside it: exit 1, InvalidSpec saying where it leads, no pool, the file untouched", async () => {
      const { roots, link, victim, sha } = linkedOutside("create");
      const before = sha();
      const recording = new FaultyCommand(sandbox.dir, "/usr/sbin/zpool");
      const cspi = cspiWith(link, sandbox.name("linked"));
      const file = join(sandbox.dir, "linked.yaml");
      writeFileSync(file, stringify(cspi));
      const result = await localRun(file, {
        ...process.env,
        ZPOOL_BIN: recording.path,
        ZFS_COMMAND_PREFIX: "",
        DEVICE_ROOTS: JSON.stringify([roots]),
      });
      expect(result.code, result.stdout).to.equal(LOCAL_EXIT.failed);
      expect((parse(result.stdout) as { holds: unknown[] }).holds).to.deep.equal([
        {
          reason: "InvalidSpec",
          message:
            `CStorPoolInstance openebs/${cspi.metadata.name}: spec.raidGroups[0].blockDevices[0].devLink ${link} (bd-disk0) resolves to ${victim}, ` +
            `outside the node daemon's device roots (${roots}/), the only places it touches: fix the BlockDevice bd-disk0 or the link on the node, ` +
            "or add the real directory to DEVICE_ROOTS of the node daemon",
        },
      ]);
      expect(
        recording
          .invocations()
          .filter((argv) => argv.includes(link) || argv.includes(victim) || /create|import/.test(argv)),
        "zpool calls",
      ).to.deep.equal([]);
      expect(zpool("list", "-H", "-o", "name")).to.not.contain(zpoolName(cspi.metadata.name!));
      expect(sha(), "the file outside the roots").to.equal(before);
    });

    it("a device link re-pointed outside the roots after the pool was made: removal destroys nothing and zeroes no label there", async () => {
      const roots = join(sandbox.dir, "roots-destroy");
      mkdirSync(roots);
      const inside = join(roots, "real0");
      writeFileSync(inside, "");
      sandbox.grow(inside, 128);
      const link = join(roots, "disk0");
      symlinkSync(inside, link);
      const cspi = cspiWith(link, sandbox.name("moved"));
      const file = join(sandbox.dir, "moved.yaml");
      const env = { ...process.env, DEVICE_ROOTS: JSON.stringify([roots]) };
      writeFileSync(file, stringify(cspi));
      await localRun(file, env);
      const pool = zpoolName(cspi.metadata.name!);
      expect(zpool("list", "-H", "-o", "name"), "created through a link inside the roots").to.contain(pool);

      const victim = sandbox.file("victim-destroy", 128);
      writeFileSync(victim, randomBytes(MiB), { flag: "r+" });
      const before = createHash("sha256").update(readFileSync(victim)).digest("hex");
      unlinkSync(link);
      symlinkSync(victim, link);
      const removed: CSPI = {
        ...cspi,
        metadata: {
          ...cspi.metadata,
          deletionTimestamp: "2026-11-21T10:00:00Z",
          annotations: { "openebs.io/pool-removal": "requested" },
        },
      };
      writeFileSync(file, stringify(removed));
      const result = await localRun(file, env);
      expect(result.code, result.stdout).to.equal(LOCAL_EXIT.failed);
      expect(result.stdout).to.contain("InvalidSpec").and.contain(`resolves to ${victim}`);
      expect(zpool("list", "-H", "-o", "name"), "the pool is kept").to.contain(pool);
      expect(
        createHash("sha256").update(readFileSync(victim)).digest("hex"),
        "no label zeroed outside the roots",
      ).to.equal(before);
    });

    it("an unreadable DEVICE_ROOTS: local mode exits 2 and the daemon process exits 1 before doing anything, both saying how to fix it", async () => {
      const file = join(sandbox.dir, "any.yaml");
      writeFileSync(file, stringify(cspiWith("/dev/sdb", sandbox.name("any"))));
      let stderr = "";
      const code = await runNodeDaemonCommand(["--cspi-file", file, "--once", "--dry-run"], {
        stdout: () => undefined,
        stderr: (t) => (stderr += t),
        env: { ...process.env, DEVICE_ROOTS: '["/"]' },
      });
      expect(code).to.equal(2);
      expect(stderr).to.contain('DEVICE_ROOTS entry "/" would let the daemon touch any path');
      const daemon = spawnSync(
        process.execPath,
        ["--import", "tsx", join(REPO_ROOT, "node-daemon/main.ts")],
        {
          cwd: REPO_ROOT,
          env: {
            PATH: process.env.PATH,
            NODE_NAME: "node-1",
            NAMESPACE: "openebs",
            DEVICE_ROOTS: "/dev",
            KUBECONFIG: "/nonexistent",
          },
          encoding: "utf8",
          timeout: 20_000,
        },
      );
      expect(daemon.status, daemon.stderr).to.equal(1);
      expect(daemon.stderr).to.contain(
        `node daemon failed: DEVICE_ROOTS must be a JSON array of absolute directories that hold the node's devices, e.g. ["/dev/"]; got /dev`,
      );
    });
  });
});
