// The tgtadm helpers the pool agent exports replicas through: what `tgtadm --op show` prints, read.
import { expect } from "chai";
import { parseTargets } from "../../iscsi/tgt.js";

describe("iscsi: tgtadm output", () => {
  it("reads targets, LUN backing stores and ACLs as tgt 1.0.85 prints them", () => {
    const shown = [
      "Target 1: iqn.2016-09.com.openebs.cstor:replica:vol1",
      "    System information:",
      "        Driver: iscsi",
      "        State: ready",
      "    I_T nexus information:",
      "    LUN information:",
      "        LUN: 0",
      "            Type: controller",
      "            Backing store path: None",
      "        LUN: 1",
      "            Type: disk",
      "            Backing store path: /var/openebs/replicas/cstor-a/vol1/replica.img",
      "            Backing store flags: ",
      "    Account information:",
      "    ACL information:",
      "        ALL",
      "Target 3: iqn.2026-11.org.example:other",
      "    System information:",
      "    LUN information:",
      "        LUN: 0",
      "            Backing store path: None",
      "    Account information:",
      "    ACL information:",
      "",
    ].join("\n");
    expect(parseTargets(shown)).to.deep.equal([
      {
        tid: 1,
        iqn: "iqn.2016-09.com.openebs.cstor:replica:vol1",
        luns: { 1: "/var/openebs/replicas/cstor-a/vol1/replica.img" },
        acl: ["ALL"],
      },
      { tid: 3, iqn: "iqn.2026-11.org.example:other", luns: {}, acl: [] },
    ]);
    expect(parseTargets("")).to.deep.equal([]);
    expect(() => parseTargets("tgtadm: something else")).to.throw(/unreadable tgtadm output/);
  });
});
