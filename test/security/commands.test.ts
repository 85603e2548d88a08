// Commands run as argument arrays, never through a shell: one module of the shipped code starts processes
// (process/runner.ts), with execFile; an argument full of shell syntax reaches the program as one
// literal argument; the configurable command prefix is a JSON array, not a string to split.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { expect } from "chai";
import { CommandError, createRunner } from "../../process/runner.js";
import { commandsFromEnv } from "../../zfs/host.js";
import { REPO_ROOT } from "../../testkit/kube.js";

/** Shipped TypeScript: every folder the build compiles (tsconfig.build.json), so a new room is covered. */
const SHIPPED: string[] = (
  JSON.parse(readFileSync(join(REPO_ROOT, "tsconfig.build.json"), "utf8")) as { include: string[] }
).include;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

describe("security: commands are argument arrays, never shell strings", () => {
  const files = SHIPPED.flatMap((dir) => sources(join(REPO_ROOT, dir)));

  it("only process/runner.ts starts processes, from a file and an argument array, and nothing asks for a shell", () => {
    expect(files.length).to.be.greaterThan(20);
    const spawning = files.filter((f) =>
      /from "node:child_process"|require\("(node:)?child_process"\)/.test(readFileSync(f, "utf8")),
    );
    expect(spawning.map((f) => relative(REPO_ROOT, f))).to.deep.equal(["process/runner.ts"]);
    const command = readFileSync(join(REPO_ROOT, "process/runner.ts"), "utf8");
    const calls = [
      ...command.matchAll(
        /\b(exec|execSync|execFile|execFileSync|spawn|spawnSync|fork)\(([^,)]*),\s*([^,)]*)/g,
      ),
    ].map((m) => m.slice(1, 4).join(" "));
    expect(calls, "one way to start a program: spawn(file, args) or execFile(file, args)").to.satisfy(
      (list: string[]) => list.length === 1 && /^(spawn|execFile) file args$/.test(list[0]),
    );
    for (const file of files)
      expect(readFileSync(file, "utf8"), relative(REPO_ROOT, file)).to.not.match(/shell:\s*(true|["'`])/);
  });

  it("passes shell syntax in an argument to the program literally; nothing is interpreted", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cstor-sec-"));
    try {
      const marker = join(dir, "pwned");
      const hostile = [
        `; touch ${marker}`,
        `$(touch ${marker})`,
        `\`touch ${marker}\``,
        `| touch ${marker}`,
        "*",
        "$HOME",
        "a\nb",
      ];
      const result = await createRunner().run(["/usr/bin/printf", "%s\\0", ...hostile]);
      expect(result.stdout.split("\0").slice(0, -1)).to.deep.equal(hostile);
      expect(existsSync(marker)).to.equal(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("does not split a program name on spaces: a command line given as one string is a failure to start, typed", async () => {
    const error = await createRunner()
      .run(["/bin/echo hello"])
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).to.be.instanceOf(CommandError);
    expect((error as CommandError).kind).to.equal("spawn");
    expect((error as CommandError).message).to.match(/^\/bin\/echo hello could not be started/);
  });

  it("takes the zpool/zfs prefix (nsenter, chroot) as a JSON array only", () => {
    expect(commandsFromEnv({ ZFS_COMMAND_PREFIX: '["nsenter","-t","1","-m","--"]' }).zpool).to.deep.equal([
      "nsenter",
      "-t",
      "1",
      "-m",
      "--",
      "zpool",
    ]);
    expect(() => commandsFromEnv({ ZFS_COMMAND_PREFIX: '["nsenter", 1]' })).to.throw(
      /ZFS_COMMAND_PREFIX must be a JSON array of strings/,
    );
    expect(() => commandsFromEnv({ ZFS_COMMAND_PREFIX: "nsenter -t 1 -m --" })).to.throw();
    expect(
      commandsFromEnv({ ZPOOL_BIN: "/sbin/zpool; reboot" }).zpool,
      "a binary path is one argv element, whatever it holds",
    ).to.deep.equal(["/sbin/zpool; reboot"]);
  });
});
