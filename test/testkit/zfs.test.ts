// The zfs-fuse sandbox's own wiring (its pools are exercised by every node daemon suite).
import { existsSync } from "node:fs";
import { expect } from "chai";
import { TEST_ENV_SCRIPT } from "../../testkit/zfs.js";

describe("zfs-fuse sandbox", () => {
  it("starts zfs-fuse again with the repository's scripts/test-env.sh", () => {
    expect(TEST_ENV_SCRIPT).to.match(/\/scripts\/test-env\.sh$/);
    expect(existsSync(TEST_ENV_SCRIPT), TEST_ENV_SCRIPT).to.equal(true);
  });
});
