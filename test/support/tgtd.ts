// A tgtd of the test's own: inside a simulated node (testkit/zfs-node.ts), so that it opens the replicas' files
// where that node mounts them, as a pool pod's tgtd opens the node's zvols; or inside a data-path test's network
// namespace (testkit/uml/network.ts), listening on its bridge for a UML guest's initiator. Private control socket
// (/var/run/tgtd/socket.<n>, n <= 32767: tgtd refuses larger ones) and portal, so tests never share one; stopped
// and its socket files removed when the test ends.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { Tgt, type TgtExport } from "../../iscsi/tgt.js";
import { createRunner } from "../../process/runner.js";
import { freePorts, waitUntil } from "../../testkit/kube.js";
import { runProgram } from "./installed.js";
import { onStop } from "../../testkit/processes.js";
import type { ZfsNode } from "../../testkit/zfs-node.js";

const socketFile = (controlPort: number) => `/var/run/tgtd/socket.${controlPort}`;
/** Control ports this process has handed out (a killed tgtd's socket file is gone until it restarts). */
const claimed = new Set<number>();

/** A control port no tgtd on this host uses now (the socket file is host-wide, whatever the namespace). */
function unusedControlPort(seed: number): number {
  for (let i = 0; i < 32767; i++) {
    const port = 1024 + ((seed + i) % (32767 - 1024));
    if (!existsSync(socketFile(port)) && !claimed.has(port)) return port;
  }
  throw new Error("no free tgtd control port");
}

export class Tgtd {
  private readonly log: string[] = [];
  private readonly exported: TgtExport[] = [];
  /** The pool agent's own tgtadm helpers (iscsi/tgt.ts), on this tgtd's control port. */
  readonly tgt: Tgt;

  private constructor(
    private readonly child: ChildProcess,
    /** TGT_CONTROL_PORT of the agent that drives it. */
    readonly controlPort: number,
    /** host:port initiators log in to. */
    readonly portal: string,
    private readonly commandPrefix: readonly string[],
  ) {
    for (const stream of [child.stdout!, child.stderr!])
      stream.on("data", (chunk: Buffer) => this.log.push(chunk.toString("utf8")));
    this.tgt = new Tgt(createRunner(), ["tgtadm", "-C", String(controlPort)]);
  }

  /** A tgtd inside a simulated node, on 127.0.0.1 and a free port. */
  static async start(node: ZfsNode): Promise<Tgtd> {
    const [iscsiPort] = await freePorts(1);
    return Tgtd.startIn(node.commandPrefix, `127.0.0.1:${iscsiPort}`, unusedControlPort(iscsiPort));
  }

  /** A tgtd on this host, on 127.0.0.1 and a free port. */
  static async onHost(): Promise<Tgtd> {
    const [iscsiPort] = await freePorts(1);
    return Tgtd.startIn([], `127.0.0.1:${iscsiPort}`, unusedControlPort(iscsiPort));
  }

  /**
   * A tgtd run through `commandPrefix` (a node's nsenter, a test network's `ip netns exec`; none: this host) on `portal`. The
   * control port defaults to an unused one; restart() passes the old one.
   */
  static async startIn(
    commandPrefix: readonly string[],
    portal: string,
    controlPort = unusedControlPort(process.pid + Math.floor(Math.random() * 32767)),
  ): Promise<Tgtd> {
    claimed.add(controlPort);
    const [file, ...args] = [
      ...commandPrefix,
      "tgtd",
      "-f",
      "-C",
      String(controlPort),
      "--iscsi",
      `portal=${portal}`,
    ];
    const child = spawn(file, args, { stdio: ["ignore", "pipe", "pipe"] });
    const tgtd = new Tgtd(child, controlPort, portal, commandPrefix);
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
    return runProgram("tgtadm", ["-C", String(this.controlPort), "--lld", "iscsi", ...args], {
      timeout: 10_000,
      killSignal: "SIGKILL",
    });
  }

  /**
   * Exports a file or device as the pool agent does (iscsi/tgt.ts): LUN 1 written through, a CHAP account bound,
   * only `initiatorName` admitted. A restart() exports it again.
   */
  async export(spec: TgtExport): Promise<void> {
    await this.tgt.create(spec);
    this.exported.push(spec);
  }

  /** A new tgtd on the same control port and portal with the same exports, as a restarted replica. */
  async restart(): Promise<Tgtd> {
    await this.kill();
    const again = await Tgtd.startIn(this.commandPrefix, this.portal, this.controlPort);
    for (const spec of this.exported) await again.export(spec);
    return again;
  }

  output(): string {
    return this.log.join("");
  }

  private running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGKILL, as a replica's node dies; then its socket files. */
  async kill(): Promise<void> {
    if (this.running()) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGKILL");
      await exited;
    }
    for (const suffix of ["", ".lock"]) rmSync(`${socketFile(this.controlPort)}${suffix}`, { force: true });
  }

  /**
   * tgtd ignores SIGTERM: its targets are deleted (--force: even with sessions), then the system, which ends it;
   * SIGKILL after 5 s whatever it does.
   */
  async stop(): Promise<void> {
    if (this.running()) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      const shown = await this.tgtadm("--op", "show", "--mode", "target");
      for (const [, tid] of shown.stdout.matchAll(/^Target (\d+):/gm))
        await this.tgtadm("--op", "delete", "--mode", "target", "--tid", tid, "--force");
      await this.tgtadm("--op", "delete", "--mode", "system");
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 5_000)))]);
      clearTimeout(timer);
    }
    await this.kill();
  }
}
