// The pool move of test/support/pool-move-scenario.ts under the real Metacontroller (METACONTROLLER_BIN and
// METACONTROLLER_CRDS; `npm run test:e2e`): a pool that serves a replica, its pod's readiness decided by what
// its node holds, no Deployment made available by fiat.
import { describePoolMove } from "../support/pool-move-scenario.js";

describePoolMove(
  "e2e: a pool that serves a replica moves to another node under the real Metacontroller (hook server, node daemons, zfs-fuse, tgtd and the pool agent)",
  true,
);
