// open-iscsi as the volume target's legs use it (iscsi/initiator.ts): the kernel's iSCSI sessions as a UML
// guest's sysfs showed them (test/fixtures/kernel/), read; iscsiadm's interface record, read; what is checked
// before iscsiadm runs; CHAP secrets kept out of error messages. Logins, logouts and the interface record
// themselves run in a real kernel in test/md/uml-kernel-adapters.test.ts.
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import {
  goneFromSysfs,
  ifaceValue,
  IscsiInitiator,
  readSessions,
  withoutSecrets,
} from "../../iscsi/initiator.js";
import { CommandError, createRunner } from "../../process/runner.js";
import { REPO_ROOT } from "../../testkit/kube.js";
import { kernelTree } from "../support/kernel-tree.js";

const leg = (n: number, disk: string, state = "running") => ({
  sid: n + 1,
  targetIqn: `iqn.2026-11.test:replica-${n}`,
  portal: `10.200.77.1:${3261 + n}`,
  iface: "cstor-1a2b3c4d",
  initiatorIqn: "iqn.2026-11.test:target-a",
  state: "LOGGED_IN",
  luns: { 1: { disk, state, sizeBytes: 64 * 1024 * 1024 } },
});

describe("iscsi: the kernel's sessions, from sysfs", () => {
  const roots: string[] = [];
  const tree = (name: string) => {
    roots.push(kernelTree(name));
    return roots.at(-1)!;
  };
  after(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })));

  it("reads each session's target, portal, interface, initiator name, state and disks (not tgt's controller LUN)", async () => {
    expect(await readSessions(tree("sysfs-sessions-up.yaml"))).to.deep.equal([
      leg(0, "sda"),
      leg(1, "sdb"),
      leg(2, "sdc"),
      leg(3, "sdd"),
    ]);
  });

  it("reads a session whose replica died: FREE, its disk transport-offline", async () => {
    const sessions = await readSessions(tree("sysfs-sessions-killed.yaml"));
    expect(sessions[2]).to.deep.equal({ ...leg(2, "sdc", "transport-offline"), state: "FREE" });
    expect(sessions.map((s) => s.state)).to.deep.equal(["LOGGED_IN", "LOGGED_IN", "FREE", "LOGGED_IN"]);
  });

  it("counts a LUN or session being torn down (its attributes read ENODEV) as gone, any other error as an error", () => {
    const coded = (code: string) => Object.assign(new Error(code), { code });
    expect(["ENOENT", "ENOTDIR", "ENODEV"].map((c) => goneFromSysfs(coded(c)))).to.deep.equal([
      true,
      true,
      true,
    ]);
    expect(["EACCES", "EIO"].map((c) => goneFromSysfs(coded(c)))).to.deep.equal([false, false]);
  });

  it("reads no sessions where the iSCSI transport class is not loaded", async () => {
    expect(await readSessions("/nonexistent")).to.deep.equal([]);
  });
});

describe("iscsi: iscsiadm, read and checked", () => {
  const options = {
    iscsiadm: ["iscsiadm"],
    sysfs: "/nonexistent",
    iface: "cstor-1a2b3c4d",
    initiatorIqn: "iqn.2026-11.io.example:target",
    replacementTimeoutSeconds: 5,
  };

  it("reads an interface record's initiator name", () => {
    const shown = readFileSync(join(REPO_ROOT, "test/fixtures/kernel/iscsiadm-iface.txt"), "utf8");
    expect(ifaceValue(shown, "iface.initiatorname")).to.equal("iqn.2026-11.test:target-a");
    expect(ifaceValue(shown, "iface.transport_name")).to.equal("tcp");
    expect(ifaceValue(shown, "iface.ipaddress"), "<empty>").to.equal(undefined);
    expect(ifaceValue(shown, "iface.nothing")).to.equal(undefined);
  });

  it("refuses bad options and bad logins before running anything", async () => {
    expect(() => new IscsiInitiator(createRunner(), { ...options, iface: "a b" })).to.throw(
      /iface "a b": use letters/,
    );
    expect(() => new IscsiInitiator(createRunner(), { ...options, initiatorIqn: "target" })).to.throw(
      /initiatorIqn "target": give an iSCSI name/,
    );
    expect(() => new IscsiInitiator(createRunner(), { ...options, replacementTimeoutSeconds: 0.5 })).to.throw(
      /replacementTimeoutSeconds must be a positive whole number of seconds, not 0.5/,
    );
    const initiator = new IscsiInitiator(createRunner(), options);
    const login = {
      targetIqn: "iqn.2016-09.com.openebs.cstor:replica:vol1",
      portal: "10.0.0.5:3260",
      user: "u",
      password: "p",
    };
    const refusal = (change: object) =>
      initiator.login({ ...login, ...change }).catch((e: Error) => e.message);
    expect(await refusal({ portal: "10.0.0.5" })).to.match(/portal "10.0.0.5": give "ip:port"/);
    expect(await refusal({ portal: "fd00::1:3260" })).to.match(/IPv6 as "\[addr\]:port"/);
    expect(await refusal({ password: "" })).to.match(/CHAP user and password must be non-empty/);
    expect(await refusal({ targetIqn: "vol1" })).to.match(/targetIqn "vol1"/);
  });

  it("keeps a CHAP password out of a failed command's message", async () => {
    const failed = (await createRunner()
      .run(["ls", "--no-such-option", "s3cret-pass"])
      .then(
        () => undefined,
        (e: unknown) => e,
      )) as CommandError;
    expect(failed).to.be.instanceOf(CommandError);
    expect(failed.message).to.include("s3cret-pass");
    const masked = withoutSecrets(failed, ["s3cret-pass"]);
    expect(masked).to.be.instanceOf(CommandError);
    expect(masked.message).to.match(/^ls --no-such-option \(secret\) exited with 2: ls: unrecognized option/);
    expect(masked.message).to.not.include("s3cret-pass");
    expect({ exitCode: masked.exitCode, stderr: masked.stderr }).to.deep.equal({
      exitCode: failed.exitCode,
      stderr: failed.stderr,
    });
  });
});
