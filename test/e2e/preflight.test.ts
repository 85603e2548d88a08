// The opt-in real-Metacontroller suite must never read as passed when it did not run: `npm run test:e2e`'s first
// command (test/e2e/preflight.ts) is run here as npm runs it, without and with the variables it needs.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { REPO_ROOT } from "../../testkit/kube.js";

function preflight(env: Record<string, string>): { status: number | null; stdout: string } {
  const result = spawnSync(process.execPath, ["--import", "tsx", "test/e2e/preflight.ts"], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
    encoding: "utf8",
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout };
}

describe("npm run test:e2e's preflight (the real-Metacontroller suite)", function () {
  this.timeout(60_000);
  let dir: string;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "cstor-preflight-"));
    writeFileSync(join(dir, "metacontroller"), "");
    writeFileSync(join(dir, "crds.yaml"), "");
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it("without METACONTROLLER_BIN and METACONTROLLER_CRDS: says how to run it and NOT RUN, and exits 2", () => {
    const { status, stdout } = preflight({});
    expect(status).to.equal(2);
    expect(stdout).to.contain("METACONTROLLER_BIN is not set; METACONTROLLER_CRDS is not set");
    expect(stdout).to.contain("npm run test:e2e").and.contain("v4.17.2").and.contain("docs/install.md");
    expect(stdout.trim().split("\n").at(-1)).to.equal(
      "real-Metacontroller suite: NOT RUN (0 passed, 0 failed, not run)",
    );
  });

  it("with a path that does not exist: names it, NOT RUN, exit 2", () => {
    const { status, stdout } = preflight({
      METACONTROLLER_BIN: join(dir, "missing"),
      METACONTROLLER_CRDS: join(dir, "crds.yaml"),
    });
    expect(status).to.equal(2);
    expect(stdout)
      .to.contain(`METACONTROLLER_BIN=${join(dir, "missing")} does not exist`)
      .and.contain("NOT RUN");
  });

  it("with both: names them and lets the suite run (exit 0)", () => {
    const { status, stdout } = preflight({
      METACONTROLLER_BIN: join(dir, "metacontroller"),
      METACONTROLLER_CRDS: join(dir, "crds.yaml"),
    });
    expect(status).to.equal(0);
    expect(stdout)
      .to.contain(`METACONTROLLER_BIN=${join(dir, "metacontroller")}`)
      .and.not.contain("NOT RUN");
  });
});
