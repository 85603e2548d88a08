// Connections carried between the host and a test network's namespace (docs/data-path-tests.md): guests reach
// only the namespace, the host's processes only the host's network, and a unix socket is a file, not a network
// endpoint, so both sides reach it. A process in the namespace (a few lines of node run through `ip netns exec`)
// listens on one end and connects each client to the other: `open` from a TCP port on the bridge address to a
// unix socket of the host (a guest dials a host server), `into` from a unix socket of the host to an address in
// the namespace (the host dials a guest's server). The same lines run in a guest (FORWARDER_SCRIPT), where they
// carry a TCP port to a unix socket of the guest's own.
import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { waitUntil } from "../kube.js";
import type { TestNetwork } from "./network.js";

/**
 * argv: the end it listens on, the end it connects each client to; each "host:port" or a unix socket's path
 * (anything with a "/"). Prints "listening" once it accepts connections.
 */
export const FORWARDER_SCRIPT = `
const net = require("node:net");
const end = (text) => text.includes("/") ? { path: text } : { host: text.slice(0, text.lastIndexOf(":")), port: Number(text.slice(text.lastIndexOf(":") + 1)) };
const [listen, connect] = process.argv.slice(1).map(end);
net.createServer((client) => {
  const upstream = net.connect(connect);
  client.pipe(upstream).pipe(client);
  client.on("error", () => upstream.destroy());
  upstream.on("error", () => client.destroy());
}).listen(listen, () => console.log("listening"));
process.on("SIGTERM", () => process.exit(0));
`;

const running = new Set<ChildProcess>();
process.once("exit", () => running.forEach((child) => child.kill("SIGKILL")));

export class NamespaceForwarder {
  private readonly log: string[] = [];

  private constructor(
    private readonly child: ChildProcess,
    /** Where clients connect: <network.hostAddress>:<port> for `open`, the socket's path for `into`. */
    readonly address: string,
    private readonly listenSocket?: string,
  ) {
    for (const stream of [child.stdout!, child.stderr!])
      stream.on("data", (chunk: Buffer) => this.log.push(chunk.toString("utf8")));
  }

  /** Listens on `network`'s bridge address and `port`, to the host's unix socket `socketPath`. */
  static open(network: TestNetwork, port: number, socketPath: string): Promise<NamespaceForwarder> {
    return NamespaceForwarder.start(network, `${network.hostAddress}:${port}`, socketPath);
  }

  /** Listens on the host's unix socket `socketPath` (made here), to `target` ("ip:port") in `network`. */
  static into(network: TestNetwork, socketPath: string, target: string): Promise<NamespaceForwarder> {
    return NamespaceForwarder.start(network, socketPath, target, socketPath);
  }

  private static async start(
    network: TestNetwork,
    listen: string,
    connect: string,
    listenSocket?: string,
  ): Promise<NamespaceForwarder> {
    const child = spawn(
      network.prefix[0],
      [...network.prefix.slice(1), process.execPath, "-e", FORWARDER_SCRIPT, listen, connect],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    running.add(child);
    const forwarder = new NamespaceForwarder(child, listen, listenSocket);
    try {
      await waitUntil(
        async () => {
          if (child.exitCode !== null || child.signalCode !== null)
            throw new Error(`the forwarder to ${connect} exited: ${forwarder.output()}`);
          return forwarder.output().includes("listening");
        },
        30_000,
        () => `the forwarder to ${connect} did not listen on ${listen}: ${forwarder.output()}`,
      );
    } catch (error) {
      await forwarder.close();
      throw error;
    }
    return forwarder;
  }

  /** What the forwarder printed. */
  output(): string {
    return this.log.join("");
  }

  /** Stops it (TERM, KILL after 5 s); a socket it listened on goes with it. */
  async close(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGTERM");
      const timer = setTimeout(() => this.child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    }
    running.delete(this.child);
    if (this.listenSocket) rmSync(this.listenSocket, { force: true });
  }
}
