// The tests' simulated nodes (testkit/zfs-node.ts) are separate as real nodes are: each sees only its
// own pools, the shared zfs-fuse sees none of them, and a pool moves between nodes only by export and import.
import { expect } from "chai";
import { createRunner } from "../../process/runner.js";
import { commandsFromEnv, ZfsHost } from "../../zfs/host.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";
import { requireZfs, zpool, ZfsSandbox } from "../../testkit/zfs.js";

describe("test support: one zfs-fuse per simulated node", function () {
  this.timeout(60_000);
  let sandbox: ZfsSandbox;
  let nodes: ZfsNode[] = [];

  before(() => requireZfs());
  beforeEach(async () => {
    sandbox = new ZfsSandbox();
    nodes = [await startNode(`a-${sandbox.id}`), await startNode(`b-${sandbox.id}`)];
  });
  afterEach(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    sandbox.cleanup();
  });

  it("a pool created on node A is seen by A only; exported, node B imports it with its data", async () => {
    const [a, b] = nodes as [ZfsNode, ZfsNode];
    const pool = `cstor-nodes-${sandbox.id}`;
    a.zpool("create", "-O", "canmount=off", pool, "mirror", sandbox.file("d1"), sandbox.file("d2"));
    const data = a.writeData(sandbox, `${pool}/vol`, 1);
    expect(a.imported(pool)).to.equal(true);
    expect(b.imported(pool), "node B sees only its own pools").to.equal(false);
    expect(zpool("list", "-H", "-o", "name").split("\n"), "the shared zfs-fuse is not node A").to.not.include(
      pool,
    );

    // A node daemon reaches its node through ZFS_COMMAND_PREFIX, as the DaemonSet reaches the host.
    const hostOfB = new ZfsHost(createRunner(), commandsFromEnv({ ZFS_COMMAND_PREFIX: b.commandPrefixEnv }));
    expect(await hostOfB.poolNames()).to.not.include(pool);
    a.zpool("export", pool);
    expect((await hostOfB.importable({ dirs: [sandbox.dir] })).map((p) => p.name)).to.include(pool);
    b.zpool("import", "-d", sandbox.dir, pool);
    expect(await hostOfB.poolNames()).to.include(pool);
    expect(a.imported(pool)).to.equal(false);
    expect(b.checksum(data.file)).to.equal(data.sha);
  });
});
