// zfs-fuse answers `zfs destroy` "dataset is busy" now and then just after a dataset was unmounted, and succeeds a
// moment later (about 1 in 60 replica destroys under load, seen in CI). A replica's destroy is tried again while
// it says busy, a few times; a dataset a holder keeps open stays busy, and the destroy fails with zfs's words.
// Other replica commands are run once, and so is a destroy ZFS refuses for another reason (a clone depends on
// the replica). The real zfs on a zfs-fuse pool, behind a wrapper that injects the answer.
import { expect } from "chai";
import { createRunner } from "../../process/runner.js";
import { requireZfs, zfs as realZfs, zpool, ZfsSandbox } from "../../testkit/zfs.js";
import { ZfsHost } from "../../zfs/host.js";
import { FaultyCommand } from "../reliability/support/faulty-zpool.js";

describe("zfs host: a replica's destroy while zfs-fuse says busy", function () {
  this.timeout(60_000);
  let sandbox: ZfsSandbox;
  let zfs: FaultyCommand;
  let host: ZfsHost;
  let pool: string;

  before(() => {
    requireZfs();
    sandbox = new ZfsSandbox();
    pool = `cstor-${sandbox.name("busy")}`;
    zpool("create", "-f", "-m", "none", pool, sandbox.file("busy-dev", 64));
    zfs = new FaultyCommand(sandbox.dir, "zfs");
    host = new ZfsHost(createRunner(), { zpool: ["zpool"], zfs: [zfs.path], truncate: ["truncate"] });
  });
  after(() => sandbox?.cleanup());

  const datasets = () => realZfs("list", "-H", "-o", "name", "-r", pool).split("\n").filter(Boolean);
  const destroys = () => zfs.invocations().filter((line) => line.startsWith("destroy")).length;

  it("destroys a replica that was busy for a moment: tried again, gone", async () => {
    realZfs("create", `${pool}/moment`);
    zfs.set("destroy", "busy-once");
    const before = destroys();
    await host.runReplicaCommand({ program: "zfs", args: ["destroy", "-r", `${pool}/moment`] });
    expect(destroys() - before).to.equal(2);
    expect(datasets()).to.not.include(`${pool}/moment`);
  });

  it("fails the destroy of a replica that stays busy, with zfs's words; the replica is still there", async () => {
    realZfs("create", `${pool}/held`);
    zfs.set("destroy", "busy");
    const before = destroys();
    const failed = await host
      .runReplicaCommand({ program: "zfs", args: ["destroy", "-r", `${pool}/held`] })
      .then(
        () => undefined,
        (error: Error) => error,
      );
    expect(failed?.message).to.match(/dataset is busy/);
    expect(destroys() - before, "tried 3 times").to.equal(3);
    expect(datasets()).to.include(`${pool}/held`);
    zfs.clear();
  });

  it("refuses, once, the destroy of a replica a clone depends on (a restore of it): ZFS's words name the clone; destroyed once the clone is gone", async () => {
    realZfs("create", `${pool}/source`);
    realZfs("snapshot", `${pool}/source@snap-1`);
    realZfs("clone", `${pool}/source@snap-1`, `${pool}/restored`);
    const before = destroys();
    const destroy = () =>
      host.runReplicaCommand({ program: "zfs", args: ["destroy", "-r", `${pool}/source`] });
    const failed = await destroy().then(
      () => undefined,
      (error: Error) => error,
    );
    expect(failed?.message)
      .to.contain(`cannot destroy '${pool}/source': filesystem has dependent clones`)
      .and.contain(`${pool}/restored`);
    expect(destroys() - before, "not busy: tried once").to.equal(1);
    expect(datasets()).to.include.members([`${pool}/source`, `${pool}/restored`]);
    realZfs("destroy", `${pool}/restored`);
    await destroy();
    expect(datasets()).to.not.include(`${pool}/source`);
  });

  it("runs another replica command once, busy or not", async () => {
    zfs.set("create", "busy");
    const before = zfs.invocations().length;
    const failed = await host.runReplicaCommand({ program: "zfs", args: ["create", `${pool}/new`] }).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(failed?.message).to.match(/dataset is busy/);
    expect(zfs.invocations().length - before).to.equal(1);
    zfs.clear();
  });
});
