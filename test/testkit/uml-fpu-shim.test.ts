// The FPU shim UML runs under (testkit/uml/fpu-shim.c; docs/data-path-tests.md): its shadow path is what a host
// with a larger XSAVE state than UML's buffer (AMX) needs, and this host never takes it when booting UML. So
// testkit/uml/fpu-shim-selftest.c plays a UML whose buffer ends where one of the host's vector components starts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { runProgram } from "../support/installed.js";

const source = (name: string) => new URL(`../../testkit/uml/${name}`, import.meta.url).pathname;

describe("UML FPU shim", function () {
  this.timeout(60_000);
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "cstor-fpu-shim-"));
    for (const [output, args] of [
      ["fpu-shim.so", ["-shared", "-fPIC", source("fpu-shim.c"), "-ldl"]],
      ["selftest", [source("fpu-shim-selftest.c")]],
    ] as const) {
      const built = await runProgram("gcc", ["-O2", "-Wall", "-o", join(dir, output), ...args], {
        timeout: 30_000,
      });
      expect(built.code, built.stderr).to.equal(0);
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps each guest task's state beyond UML's buffer, where a short SET alone fails", async () => {
    const bare = await runProgram(join(dir, "selftest"), [], { timeout: 10_000 });
    expect(bare.stdout).to.match(/without the shim fails .*: ok/);
    expect(bare.code, "without the shim some check fails").to.equal(1);

    const shimmed = await runProgram(join(dir, "selftest"), [], {
      timeout: 10_000,
      env: { ...process.env, LD_PRELOAD: join(dir, "fpu-shim.so") },
    });
    expect(shimmed.stdout).to.not.include("FAIL");
    expect(shimmed.code, shimmed.stdout + shimmed.stderr).to.equal(0);
  });
});
