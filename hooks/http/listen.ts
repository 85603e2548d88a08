// Listening: plain HTTP for Metacontroller, and HTTPS for the API server's admission calls when a
// certificate is configured. Both get timeouts that outlive Go's 90 s idle keep-alive, and the
// certificate is re-read when it changes on disk (cert-manager renews it in place).
import { readFileSync, unwatchFile, watchFile } from "node:fs";
import { createServer as createHttpServer, type RequestListener, type Server } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { Logger } from "../../runtime/log.js";

export interface TlsFiles {
  port: number;
  certFile: string;
  keyFile: string;
}

export interface ServerTimeouts {
  /**
   * An idle keep-alive connection is kept this long. Metacontroller's Go client keeps idle connections 90 s;
   * closing ours first races with its next request on that connection, which then fails.
   */
  keepAliveMs: number;
  /** A client gets this long to send its request headers (408, then closed). Idle keep-alive connections are not affected. */
  headersMs: number;
  /**
   * ... and this long for the whole request, body included; a hook request arrives in milliseconds. At least
   * headersMs: Node silently swaps the two otherwise, which made a 30 s request limit a 100 s one.
   */
  requestMs: number;
  /** How often Node checks connections against the two limits above. */
  checkIntervalMs: number;
}

export const DEFAULT_TIMEOUTS: ServerTimeouts = {
  keepAliveMs: 95_000,
  headersMs: 20_000,
  requestMs: 30_000,
  checkIntervalMs: 5_000,
};

export interface ListenOptions {
  port: number;
  tls?: TlsFiles;
  log: Logger;
  /** How often to look for a renewed certificate. */
  certPollMs?: number;
  timeouts?: ServerTimeouts;
}

export interface Listening {
  servers: Server[];
  /** Stops accepting, lets in-flight requests finish, then resolves. */
  close(): Promise<void>;
}

function tune(server: Server, timeouts: ServerTimeouts): Server {
  server.keepAliveTimeout = timeouts.keepAliveMs;
  server.headersTimeout = timeouts.headersMs;
  server.requestTimeout = timeouts.requestMs;
  return server;
}

function readTls(tls: TlsFiles): { cert: Buffer; key: Buffer } {
  return { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) };
}

export async function listen(app: RequestListener, options: ListenOptions): Promise<Listening> {
  const timeouts = options.timeouts ?? DEFAULT_TIMEOUTS;
  if (timeouts.headersMs > timeouts.requestMs)
    throw new Error(
      `headers timeout ${timeouts.headersMs} ms is above the request timeout ${timeouts.requestMs} ms`,
    );
  const checking = { connectionsCheckingInterval: timeouts.checkIntervalMs };
  const servers: Server[] = [tune(createHttpServer(checking, app), timeouts)];
  let https: HttpsServer | undefined;
  if (options.tls) {
    const tls = options.tls;
    https = createHttpsServer({ ...checking, ...readTls(tls) }, app);
    servers.push(tune(https, timeouts));
    const reload = (): void => {
      try {
        https!.setSecureContext(readTls(tls));
        options.log.info("TLS certificate reloaded", { certFile: tls.certFile });
      } catch (err) {
        options.log.error("TLS certificate reload failed; keeping the previous one", {
          error: (err as Error).message,
        });
      }
    };
    watchFile(tls.certFile, { interval: options.certPollMs ?? 30_000 }, reload);
  }
  const ports = [options.port, ...(options.tls ? [options.tls.port] : [])];
  await Promise.all(
    servers.map(
      (server, i) =>
        new Promise<void>((resolve, reject) => {
          server.once("error", reject);
          server.listen(ports[i], () => resolve());
        }),
    ),
  );
  options.log.info("hook server listening", {
    port: options.port,
    ...(options.tls ? { tlsPort: options.tls.port } : {}),
  });
  return {
    servers,
    close: async () => {
      if (options.tls) unwatchFile(options.tls.certFile);
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              // A connection whose last answer went out with keep-alive (it began before the drain) turns idle
              // later; Node closes idle connections only once, at close(), so they are swept until the end.
              const sweep = setInterval(() => server.closeIdleConnections(), 250);
              server.close(() => {
                clearInterval(sweep);
                resolve();
              });
              server.closeIdleConnections();
            }),
        ),
      );
    },
  };
}

/** TLS settings from the environment: all three or none. */
export function tlsFromEnv(env: NodeJS.ProcessEnv): TlsFiles | undefined {
  const { TLS_PORT, TLS_CERT_FILE, TLS_KEY_FILE } = env;
  if (!TLS_PORT && !TLS_CERT_FILE && !TLS_KEY_FILE) return undefined;
  if (!TLS_PORT || !TLS_CERT_FILE || !TLS_KEY_FILE) {
    throw new Error(
      "TLS needs TLS_PORT, TLS_CERT_FILE and TLS_KEY_FILE together (e.g. 8443, /etc/cstor-pool-hooks/tls/tls.crt, .../tls.key)",
    );
  }
  return { port: Number(TLS_PORT), certFile: TLS_CERT_FILE, keyFile: TLS_KEY_FILE };
}
