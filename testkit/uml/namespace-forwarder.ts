// A TCP port on a test network's bridge address that leads to a unix socket of this host (docs/data-path-tests.md):
// guests reach only the namespace, and a unix socket is a file, not a network endpoint, so a process in the
// namespace (a few lines of node run through `ip netns exec`) listens there and connects each client to the socket.
import { spawn, type ChildProcess } from "node:child_process";
import { waitUntil } from "../kube.js";
import type { TestNetwork } from "./network.js";

// argv: listen host, listen port, unix socket. Prints "listening" once it accepts connections.
const FORWARDER = `
const net = require("node:net");
const [host, port, socket] = process.argv.slice(1);
net.createServer((client) => {
  const upstream = net.connect(socket);
  client.pipe(upstream).pipe(client);
  client.on("error", () => upstream.destroy());
  upstream.on("error", () => client.destroy());
}).listen(Number(port), host, () => console.log("listening"));
process.on("SIGTERM", () => process.exit(0));
`;

const running = new Set<ChildProcess>();
process.once("exit", () => running.forEach((child) => child.kill("SIGKILL")));

export class NamespaceForwarder {
  private readonly log: string[] = [];

  private constructor(
    private readonly child: ChildProcess,
    /** <network.hostAddress>:<port>: where a guest connects. */
    readonly address: string,
  ) {
    for (const stream of [child.stdout!, child.stderr!])
      stream.on("data", (chunk: Buffer) => this.log.push(chunk.toString("utf8")));
  }

  /** Listens on `network`'s bridge address and `port`; resolves once it accepts connections. */
  static async open(network: TestNetwork, port: number, socketPath: string): Promise<NamespaceForwarder> {
    const child = spawn(
      network.prefix[0],
      [
        ...network.prefix.slice(1),
        process.execPath,
        "-e",
        FORWARDER,
        network.hostAddress,
        String(port),
        socketPath,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    running.add(child);
    const forwarder = new NamespaceForwarder(child, `${network.hostAddress}:${port}`);
    try {
      await waitUntil(
        async () => {
          if (child.exitCode !== null || child.signalCode !== null)
            throw new Error(`the forwarder to ${socketPath} exited: ${forwarder.output()}`);
          return forwarder.output().includes("listening");
        },
        30_000,
        () => `the forwarder to ${socketPath} did not listen on ${forwarder.address}: ${forwarder.output()}`,
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

  /** Stops it (TERM, KILL after 5 s). */
  async close(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGTERM");
      const timer = setTimeout(() => this.child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    }
    running.delete(this.child);
  }
}
