// What the node operations reach the node through: one command runner (argv arrays, each command with a
// timeout), the iscsiadm prefix, and where sysfs, the device nodes and the mount table are. The gRPC service
// passes the real ones; nothing else decides how the node is reached.
import type { Runner } from "../../process/runner.js";

export interface NodeHost {
  runner: Runner;
  /** argv prefix of iscsiadm: ["iscsiadm"], or ["nsenter", "--target", "1", "--net", "--", "iscsiadm"]. */
  iscsiadm: readonly string[];
  /** Where sysfs is mounted: "/sys". */
  sysfs: string;
  /** Where the device nodes are: "/dev". */
  dev: string;
  /** The mount table of the mount namespace the mounts are made in: "/proc/self/mountinfo". */
  mountinfo: string;
  /** How long stage waits for the LUN's disk after the login, and expand for the disk's new size. */
  deviceWaitMs: number;
}

/** The node as a driver container sees it, with the host's /dev, /sys and the host's network namespace. */
export function nodeHost(runner: Runner, iscsiadm: readonly string[] = ["iscsiadm"]): NodeHost {
  return {
    runner,
    iscsiadm,
    sysfs: "/sys",
    dev: "/dev",
    mountinfo: "/proc/self/mountinfo",
    deviceWaitMs: 30_000,
  };
}

/** Runs one command with the timeout a mount, mkfs or resize of a volume gets. */
export function run(host: NodeHost, argv: readonly string[]): Promise<string> {
  return host.runner.run(argv, { timeoutMs: 120_000 }).then((result) => result.stdout);
}
