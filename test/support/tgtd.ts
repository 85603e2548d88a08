// A tgtd of the test's own, run inside a simulated node (testkit/zfs-node.ts) so that it opens the
// replicas' files where that node mounts them, as a pool pod's tgtd opens the node's zvols. Private control
// socket (/var/run/tgtd/socket.<n>) and portal (127.0.0.1:<free port>), so tests never share one; stopped
// and its socket files removed when the test ends.
import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { freePorts, waitUntil } from "../../testkit/kube.js";
import { runProgram } from "./installed.js";
import { onStop } from "../../testkit/processes.js";
import type { ZfsNode } from "../../testkit/zfs-node.js";

export class Tgtd {
  private readonly log: string[] = [];

  private constructor(
    private readonly child: ChildProcess,
    /** TGT_CONTROL_PORT of the agent that drives it. */
    readonly controlPort: number,
    /** host:port initiators log in to. */
    readonly portal: string,
  ) {
    for (const stream of [child.stdout!, child.stderr!])
      stream.on("data", (chunk: Buffer) => this.log.push(chunk.toString("utf8")));
  }

  static async start(node: ZfsNode): Promise<Tgtd> {
    const [iscsiPort] = await freePorts(1);
    // tgtd takes control ports up to 32767 (it refuses 43899 as out of range).
    const controlPort = 1 + (iscsiPort % 32767);
    const portal = `127.0.0.1:${iscsiPort}`;
    const [enter, ...enterArgs] = node.commandPrefix;
    const child = spawn(
      enter,
      [...enterArgs, "tgtd", "-f", "-C", String(controlPort), "--iscsi", `portal=${portal}`],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    const tgtd = new Tgtd(child, controlPort, portal);
    onStop(() => tgtd.stop());
    await waitUntil(
      async () => {
        if (child.exitCode !== null) throw new Error(`tgtd exited with ${child.exitCode}: ${tgtd.output()}`);
        return (await tgtd.tgtadm("--mode", "target", "--op", "show")).code === 0;
      },
      30_000,
      () => `tgtd did not answer on control port ${controlPort}: ${tgtd.output()}`,
    );
    return tgtd;
  }

  tgtadm(...args: string[]) {
    return runProgram("tgtadm", ["-C", String(this.controlPort), "--lld", "iscsi", ...args]);
  }

  output(): string {
    return this.log.join("");
  }

  /** tgtd ignores SIGTERM while it serves targets: it is the test's, so SIGKILL; then its socket files. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGKILL");
      await exited;
    }
    for (const suffix of ["", ".lock"])
      rmSync(`/var/run/tgtd/socket.${this.controlPort}${suffix}`, { force: true });
  }
}
