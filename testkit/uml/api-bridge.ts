// The test's kube-apiserver as the guests of a data-path test reach it (docs/data-path-tests.md): the apiserver
// listens on the host's loopback (testkit/kube.ts), which the test network's namespace cannot see, so a bridge
// carries each TCP connection across, TLS untouched end to end:
//
//   guest ── 10.200.N.1:<port> ── forwarder in the namespace ── unix socket ── this process ── 127.0.0.1:<port>
//
// The forwarder in the namespace (testkit/uml/namespace-forwarder.ts) connects to a unix socket this process listens on.
//
// The guests' kubeconfig names the bridge's address as the server and keeps TLS verification on: the CA is the
// apiserver's self-signed chain, and `tls-server-name` is a DNS name its serving certificate carries
// (kubernetes.default.svc, as an in-cluster client reaches the apiserver), so the certificate is checked against
// that name instead of the bridge's address. @kubernetes/client-node 1.4.0 passes tls-server-name to TLS as
// `servername`, and Node checks the certificate against the servername when one is given.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import type { Identity, KubeCluster } from "../kube.js";
import { onStop } from "../processes.js";
import { NamespaceForwarder } from "./namespace-forwarder.js";
import type { TestNetwork } from "./network.js";

/** A name the apiserver's self-signed serving certificate carries (openssl x509 -text: its DNS SANs). */
export const APISERVER_TLS_NAME = "kubernetes.default.svc";

/** Pipes two sockets together; an error on either end ends both. */
function splice(a: Socket, b: Socket): void {
  a.pipe(b).pipe(a);
  a.on("error", () => b.destroy());
  b.on("error", () => a.destroy());
}

export class ApiBridge {
  /** https://<network.hostAddress>:<port>: the apiserver as guests reach it. */
  readonly server: string;
  private closed = false;

  private constructor(
    private readonly cluster: KubeCluster,
    readonly network: TestNetwork,
    private readonly dir: string,
    /** The unix socket's server and the connections it carries (a watch stays open until it is cut). */
    private readonly local: { unixServer: Server; open: Set<Socket> },
    private readonly forwarder: NamespaceForwarder,
    readonly port: number,
  ) {
    this.server = `https://${forwarder.address}`;
  }

  /** Opens the bridge from `network`'s bridge address, on the apiserver's own port, to `cluster`'s apiserver. */
  static async open(cluster: KubeCluster, network: TestNetwork): Promise<ApiBridge> {
    const upstream = new URL(cluster.server);
    const port = Number(upstream.port);
    const dir = mkdtempSync(join(tmpdir(), "cstor-api-bridge-"));
    const socketPath = join(dir, "apiserver.sock");
    const open = new Set<Socket>();
    const unixServer = createServer((client) => {
      const toApiserver = createConnection({ host: upstream.hostname, port });
      for (const socket of [client, toApiserver]) {
        open.add(socket);
        socket.once("close", () => open.delete(socket));
      }
      splice(client, toApiserver);
    });
    await new Promise<void>((resolve, reject) => {
      unixServer.once("error", reject);
      unixServer.listen(socketPath, resolve);
    });
    const forwarder = await NamespaceForwarder.open(network, port, socketPath).catch(async (error) => {
      await new Promise((resolve) => unixServer.close(resolve));
      rmSync(dir, { recursive: true, force: true });
      throw error;
    });
    const bridge = new ApiBridge(cluster, network, dir, { unixServer, open }, forwarder, port);
    onStop(() => bridge.close());
    return bridge;
  }

  /** What the forwarder in the namespace printed. */
  output(): string {
    return this.forwarder.output();
  }

  /**
   * A kubeconfig for a process in a guest acting as `as`: the bridge's address, the apiserver's CA inline (the
   * guest's /dev/shm, where the test apiserver keeps its certificates, is the guest's own), the certificate's
   * name to verify. Written in the bridge's directory under /tmp, which guests see through hostfs; returns its
   * path.
   */
  kubeconfig(as: Identity, name = "guest"): string {
    const user = as.username;
    const config = {
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: "test",
          cluster: {
            server: this.server,
            "certificate-authority-data": readFileSync(this.cluster.caFile).toString("base64"),
            "tls-server-name": APISERVER_TLS_NAME,
          },
        },
      ],
      users: [{ name: user, user: { token: as.token } }],
      contexts: [{ name: user, context: { cluster: "test", user } }],
      "current-context": user,
    };
    const path = join(this.dir, `${name}.kubeconfig`);
    writeFileSync(path, stringify(config), { mode: 0o600 });
    return path;
  }

  /** Stops the forwarder and the unix socket's server; removes the directory (kubeconfigs included). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.forwarder.close();
    const closed = new Promise((resolve) => this.local.unixServer.close(resolve));
    this.local.open.forEach((socket) => socket.destroy());
    await closed;
    rmSync(this.dir, { recursive: true, force: true });
  }
}
