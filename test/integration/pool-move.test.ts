// The pool move of test/support/pool-move-scenario.ts in `npm test`: under the emulated Metacontroller (or the
// real binary, when METACONTROLLER_BIN and METACONTROLLER_CRDS name it, as for the chaos runs).
import { describePoolMove } from "../support/pool-move-scenario.js";

describePoolMove(
  "integration: a pool that serves a replica moves to another node (Metacontroller, the hook server, node daemons, zfs-fuse, tgtd and the pool agent)",
);
