// The simulated nodes of the real-Metacontroller suite: a name, a node daemon process, and the node's own view
// of ZFS. The suite only talks to a node through NodeZfs, so the way nodes are kept apart can change without
// touching the steps.
//
// Today every node shares this host's zfs-fuse (sharedZfs): each daemon sees every pool, which real nodes never
// do. A migration then cannot show whether the new node's daemon imports the pool itself. Nodes with a zfs-fuse
// each, in their own mount namespace reached through ZFS_COMMAND_PREFIX, implement the same interface.
import { checksum, writeData, zfs, zpool, type ZfsSandbox } from "../support/zfs.js";
import type { DaemonProcess } from "../support/node-daemon-process.js";

export interface NodeZfs {
  /** The node daemon's environment overrides that make it run this node's zpool and zfs. */
  daemonOverrides: Record<string, string>;
  zpool(...args: string[]): string;
  zfs(...args: string[]): string;
  /** A dataset mounted in the sandbox with a file of random data: the file and its sha256, as this node sees it. */
  writeData(dataset: string): { file: string; sha: string };
  /** sha256 of a file, read on this node. */
  checksum(file: string): string;
}

export interface SimulatedNode {
  name: string;
  zfs: NodeZfs;
  daemon: DaemonProcess;
}

/** Every node on this host's one zfs-fuse; the daemon runs zpool and zfs directly (no nsenter into PID 1). */
export function sharedZfs(sandbox: ZfsSandbox): NodeZfs {
  return {
    daemonOverrides: { ZFS_COMMAND_PREFIX: "[]" },
    zpool,
    zfs,
    writeData: (dataset) => writeData(sandbox, dataset),
    checksum,
  };
}
