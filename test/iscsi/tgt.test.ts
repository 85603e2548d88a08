// The tgtadm helpers the pool agent exports replicas through: what `tgtadm --op show` prints, read; and an
// export made by them in a real tgtd, logged in to by libiscsi with chosen initiator names and CHAP.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import {
  parseAccounts,
  parseTargets,
  tgtShownMegabytes,
  withoutSecret,
  type TgtExport,
} from "../../iscsi/tgt.js";
import { TARGET_SESSION_PARAMETERS } from "../../iscsi/negotiation.js";
import { createRunner } from "../../process/runner.js";
import {
  AUTHENTICATION_FAILURE,
  holdLogin,
  inquiry,
  lunSize,
  readLun,
  TARGET_NOT_FOUND,
  type Login,
} from "../support/initiator.js";
import { waitUntil } from "../../testkit/kube.js";

const MiB = 1024 * 1024;
import { Tgtd } from "../support/tgtd.js";

// tgt 1.0.85 (Debian 12), after iscsi/tgt.ts's create and a target made by hand with an outgoing account.
const SHOWN = `Target 1: iqn.2016-09.com.openebs.cstor:replica:vol1
    System information:
        Driver: iscsi
        State: ready
    I_T nexus information:
        I_T nexus: 1
            Initiator: iqn.2016-09.com.openebs.cstor:target:vol1 alias: none
            Connection: 0
                IP Address: 127.0.0.1
    LUN information:
        LUN: 0
            Type: controller
            SCSI ID: IET     00010000
            SCSI SN: beaf10
            Size: 0 MB, Block size: 1
            Online: Yes
            Removable media: No
            Prevent removal: No
            Readonly: No
            SWP: No
            Thin-provisioning: No
            Backing store type: null
            Backing store path: None
            Backing store flags: 
        LUN: 1
            Type: disk
            SCSI ID: IET     00010001
            SCSI SN: beaf11
            Size: 4 MB, Block size: 512
            Online: Yes
            Removable media: No
            Prevent removal: No
            Readonly: No
            SWP: No
            Thin-provisioning: No
            Backing store type: rdwr
            Backing store path: /var/openebs/replicas/cstor-a/vol1/replica.img
            Backing store flags: sync
    Account information:
        vol1
    ACL information:
        iqn.2016-09.com.openebs.cstor:target:vol1
Target 3: iqn.2026-11.org.example:other
    System information:
        Driver: iscsi
        State: ready
    I_T nexus information:
    LUN information:
        LUN: 0
            Type: controller
            Backing store type: null
            Backing store path: None
            Backing store flags: 
        LUN: 2
            Type: disk
            Backing store type: rdwr
            Backing store path: /tmp/r1.img
            Backing store flags: sync:direct
    Account information:
        outu (outgoing)
    ACL information:
        ALL
        10.0.0.7
`;

describe("iscsi: tgtadm output", () => {
  it("reads targets, LUN backing stores, their flags and sizes, the initiators logged in, ACLs (addresses and names) and incoming accounts as tgt 1.0.85 prints them", () => {
    expect(parseTargets(SHOWN)).to.deep.equal([
      {
        tid: 1,
        iqn: "iqn.2016-09.com.openebs.cstor:replica:vol1",
        luns: {
          1: {
            backingStore: "/var/openebs/replicas/cstor-a/vol1/replica.img",
            flags: ["sync"],
            shownMegabytes: 4,
          },
        },
        acl: ["iqn.2016-09.com.openebs.cstor:target:vol1"],
        accounts: ["vol1"],
        loggedIn: ["iqn.2016-09.com.openebs.cstor:target:vol1"],
      },
      {
        tid: 3,
        iqn: "iqn.2026-11.org.example:other",
        luns: { 2: { backingStore: "/tmp/r1.img", flags: ["sync", "direct"] } },
        acl: ["ALL", "10.0.0.7"],
        accounts: [],
        loggedIn: [],
      },
    ]);
    expect(parseTargets("")).to.deep.equal([]);
    expect(() => parseTargets("tgtadm: something else")).to.throw(/unreadable tgtadm output/);
    expect(parseAccounts("Account list:\n    outu\n    vol1\n")).to.deep.equal(["outu", "vol1"]);
    expect(parseAccounts("")).to.deep.equal([]);
    expect(() => parseAccounts("tgtadm: can't find the account")).to.throw(/unreadable tgtadm account list/);
  });
});

describe("iscsi: an export made by iscsi/tgt.ts in a real tgtd admits only its initiator, with its CHAP", function () {
  this.timeout(60_000);
  let tgtd: Tgtd;
  let dir: string;
  const spec = (file: string): TgtExport => ({
    tid: 1,
    iqn: "iqn.2016-09.com.openebs.cstor:replica:vol-t",
    backingStore: file,
    initiatorName: "iqn.2016-09.com.openebs.cstor:target:vol-t",
    user: "vol-t",
    password: "0123456789abcdef0123456789abcdef",
  });
  const login = (s: TgtExport, changes: Partial<Login> = {}): Login => ({
    portal: tgtd.portal,
    iqn: s.iqn,
    initiator: s.initiatorName,
    user: s.user,
    password: s.password,
    ...changes,
  });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "cstor-tgt-"));
    tgtd = await Tgtd.onHost();
  });
  after(async () => {
    await tgtd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("is LUN 1 written through, its account bound and its initiator name its whole ACL; the right name and password log in, a wrong password, no CHAP or a foreign name do not", async () => {
    const file = join(dir, "lun.img");
    writeFileSync(file, "");
    truncateSync(file, 4 * 1024 * 1024);
    const s = spec(file);
    await tgtd.tgt.create(s);
    expect(await tgtd.tgt.targets()).to.deep.equal([
      {
        tid: 1,
        iqn: s.iqn,
        luns: { 1: { backingStore: file, flags: ["sync"], shownMegabytes: tgtShownMegabytes(4 * MiB) } },
        acl: [s.initiatorName],
        accounts: [s.user],
        loggedIn: [],
      },
    ]);
    // What tgtd offers at login: the project's parameters, not RFC 3720's 8 KiB segments and initial R2T.
    const offered = await createRunner().run([
      "tgtadm",
      "-C",
      String(tgtd.controlPort),
      "--lld",
      "iscsi",
      "--mode",
      "target",
      "--op",
      "show",
      "--tid",
      "1",
    ]);
    const offeredLines = offered.stdout.split("\n").map((line) => line.trim());
    for (const [name, value] of TARGET_SESSION_PARAMETERS)
      expect(offeredLines, name).to.include(`${name}=${value}`);

    const admitted = await inquiry(login(s));
    expect(admitted.code, admitted.stderr).to.equal(0);
    expect(admitted.stdout).to.match(/Peripheral Device Type:DIRECT_ACCESS/);
    const wrong = await inquiry(login(s, { password: "fedcba9876543210fedcba9876543210" }));
    expect(wrong.code).to.not.equal(0);
    expect(wrong.stderr).to.match(AUTHENTICATION_FAILURE);
    const noChap = await inquiry(login(s, { user: undefined, password: undefined }));
    expect(noChap.code).to.not.equal(0);
    expect(noChap.stderr).to.match(AUTHENTICATION_FAILURE);
    // Another volume's target, with this volume's password: tgtd's ACL hides the target from it.
    const foreign = await inquiry(login(s, { initiator: "iqn.2016-09.com.openebs.cstor:target:vol-u" }));
    expect(foreign.code).to.not.equal(0);
    expect(foreign.stderr).to.match(TARGET_NOT_FOUND);
  });

  it("serves a grown backing store at its old size until it is reopened, then at its new size with its data; shows who is logged in", async () => {
    const file = join(dir, "grown.img");
    const data = randomBytes(MiB);
    writeFileSync(file, data);
    truncateSync(file, 4 * MiB);
    const s = { ...spec(file), tid: 3, iqn: "iqn.2016-09.com.openebs.cstor:replica:vol-g", user: "vol-g" };
    await tgtd.tgt.create(s);
    const shown = async () => (await tgtd.tgt.targets()).find((t) => t.tid === s.tid)!;

    // Logged in meanwhile (qemu-io holds a session as a volume target's leg does): tgtd names the initiator.
    const held = holdLogin(login(s), 4000);
    await waitUntil(
      async () => (await shown()).loggedIn.length > 0,
      20_000,
      () => "nobody logged in",
    );
    expect((await shown()).loggedIn).to.deep.equal([s.initiatorName]);
    expect((await held).code).to.equal(0);
    await waitUntil(
      async () => (await shown()).loggedIn.length === 0,
      20_000,
      () => "the login stayed",
    );

    truncateSync(file, 12 * MiB);
    expect(await lunSize(login(s)), "tgtd read the size when it opened the file").to.equal(4 * MiB);
    expect((await shown()).luns[1].shownMegabytes).to.equal(tgtShownMegabytes(4 * MiB));
    await tgtd.tgt.reopen(s.tid, 1, file);
    expect(await lunSize(login(s))).to.equal(12 * MiB);
    expect((await shown()).luns[1]).to.deep.equal({
      backingStore: file,
      flags: ["sync"],
      shownMegabytes: tgtShownMegabytes(12 * MiB),
    });
    const readBack = join(dir, "grown-read.img");
    await readLun(login(s), readBack);
    expect(readFileSync(readBack).subarray(0, MiB).equals(data), "what it held before reads back").to.equal(
      true,
    );
    expect(statSync(readBack).size).to.equal(12 * MiB);
  });

  it("replaces an account of the same user (tgtadm refuses a second one and never shows a password), and deletes it on request", async () => {
    const file = join(dir, "lun2.img");
    writeFileSync(file, "");
    truncateSync(file, 1024 * 1024);
    const s = { ...spec(file), tid: 2, iqn: "iqn.2016-09.com.openebs.cstor:replica:vol-v", user: "vol-v" };
    // Left by an earlier export of the volume, with an old password.
    await tgtd.tgt.createAccount(s.user, "00000000000000000000000000000000");
    await tgtd.tgt.create(s);
    expect(await tgtd.tgt.accounts()).to.include(s.user);
    const old = await inquiry(login(s, { password: "00000000000000000000000000000000" }));
    expect(old.stderr).to.match(AUTHENTICATION_FAILURE);
    const now = await inquiry(login(s));
    expect(now.code, now.stderr).to.equal(0);

    await tgtd.tgt.delete(s.tid);
    await tgtd.tgt.deleteAccount(s.user);
    expect((await tgtd.tgt.targets()).map((t) => t.tid)).to.not.include(s.tid);
    expect(await tgtd.tgt.accounts()).to.not.include(s.user);
  });

  it("never quotes the password when tgtadm fails, and refuses what tgtd would cut at a comma", async () => {
    const password = "0123456789abcdef0123456789abcdef";
    // A control port no tgtd listens on: the command fails, and its error quotes the command line.
    const failed = await createRunner()
      .run([
        "tgtadm",
        "-C",
        "32767",
        "--lld",
        "iscsi",
        "--mode",
        "account",
        "--op",
        "new",
        "--user",
        "u",
        "--password",
        password,
      ])
      .then(
        () => undefined,
        (error: Error) => error,
      );
    expect(failed?.message).to.contain(password);
    const shown = withoutSecret(failed!, password).message;
    expect(shown)
      .to.match(/^tgtadm -C 32767 .*--password <password> exited with/)
      .and.not.contain(password);
    // tgtd reads `--user a,b` as user a: refused before tgtadm runs.
    const comma = await tgtd.tgt.createAccount("vol-w", "a,b").then(
      () => "made",
      (error: Error) => error.message,
    );
    expect(comma).to.match(/its password is empty or holds a comma/);
    expect(await tgtd.tgt.accounts()).to.not.include("vol-w");
  });
});
