// A TCP proxy in front of the kube-apiserver, so a test can make the API server go away (every connection
// reset, new ones refused) and come back on the same address, without stopping the shared apiserver.
import { connect, createServer, type Server, type Socket } from "node:net";

export class TcpProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly targetPort: number,
    public port: number,
  ) {}

  static async start(targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetPort, 0);
    await proxy.up();
    return proxy;
  }

  get isUp(): boolean {
    return this.server !== undefined;
  }

  /** Listens again, on the same port as before. */
  async up(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, "127.0.0.1");
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on("close", () => this.sockets.delete(socket));
        socket.on("error", () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  /** The API server is gone: open connections are reset, new ones refused. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise((resolve) => server.close(resolve));
  }
}
