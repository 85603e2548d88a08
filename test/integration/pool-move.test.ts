// The pool move of test/support/pool-move-scenario.ts under the emulated Metacontroller loop (its syncs follow
// the wall clock): in `npm test`. The same scenario runs under the real binary in test/e2e/pool-move.e2e.ts.
import { INSTALL_NAMESPACE } from "../../testkit/kube.js";
import { MetacontrollerDriver, serveHooks } from "../../testkit/metacontroller-driver.js";
import { MetacontrollerLoop } from "../../testkit/metacontroller-loop.js";
import { describePoolMove } from "../support/pool-move-scenario.js";

let loop: MetacontrollerLoop | undefined;

describePoolMove(
  "integration: a pool that serves a replica moves to another node (emulated Metacontroller, node daemons, zfs-fuse, tgtd and the pool agent)",
  {
    async start(cluster) {
      const driver = new MetacontrollerDriver({ cluster, hookServer: await serveHooks() });
      loop = new MetacontrollerLoop(driver, INSTALL_NAMESPACE, ["cstor-pool-cluster", "cstor-pool-instance"]);
      await loop.start();
    },
    async step() {
      await loop!.runInRealTime(200);
    },
    async stop() {},
    tail: () => "",
    problems: () => [],
  },
);
