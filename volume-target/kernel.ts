// What the target agent needs from the node's kernel, as the shared rooms provide it: the legs' iSCSI sessions
// (iscsi/initiator.ts), the md array (md/mdadm.ts) and the LUN served by LIO (iscsi/lio.ts). The agent takes
// them as parameters so that its main wires the real ones and nothing else decides how they are reached.
import type { IscsiInitiator, SessionView } from "../iscsi/initiator.js";
import type { Lio, LioState } from "../iscsi/lio.js";
import type { ArrayState, Mdadm, Superblock } from "../md/mdadm.js";

export type { ArrayState, LioState, SessionView, Superblock };

export type Legs = Pick<IscsiInitiator, "ensureIface" | "login" | "logout" | "sessions" | "rescan">;
export type Arrays = Pick<
  Mdadm,
  | "examine"
  | "create"
  | "assemble"
  | "assembleWithNewUuid"
  | "find"
  | "state"
  | "add"
  | "reAdd"
  | "remove"
  | "grow"
  | "growSize"
  | "stop"
  | "holdWrites"
  | "releaseWrites"
  | "writesHeld"
>;
export type Exports = Pick<Lio, "read" | "ensure" | "setWriteProtect" | "remove">;

export interface Kernel {
  legs: Legs;
  arrays: Arrays;
  exports: Exports;
}
