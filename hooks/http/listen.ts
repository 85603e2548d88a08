// Listening: plain HTTP for Metacontroller, and HTTPS for the API server's admission calls when a
// certificate is configured. Both get timeouts that outlive Go's 90 s idle keep-alive, and the
// certificate is re-read when it changes on disk (cert-manager renews it in place).
import { readFileSync, unwatchFile, watchFile } from "node:fs";
import { createServer as createHttpServer, type RequestListener, type Server } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { Logger } from "../../lib/log.js";

export interface TlsFiles {
  port: number;
  certFile: string;
  keyFile: string;
}

export interface ListenOptions {
  port: number;
  tls?: TlsFiles;
  log: Logger;
  /** How often to look for a renewed certificate. */
  certPollMs?: number;
}

export interface Listening {
  servers: Server[];
  /** Stops accepting, lets in-flight requests finish, then resolves. */
  close(): Promise<void>;
}

function tune(server: Server): Server {
  server.keepAliveTimeout = 95_000;
  server.headersTimeout = 100_000;
  server.requestTimeout = 30_000;
  return server;
}

function readTls(tls: TlsFiles): { cert: Buffer; key: Buffer } {
  return { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) };
}

export async function listen(app: RequestListener, options: ListenOptions): Promise<Listening> {
  const servers: Server[] = [tune(createHttpServer(app))];
  let https: HttpsServer | undefined;
  if (options.tls) {
    const tls = options.tls;
    https = createHttpsServer(readTls(tls), app);
    servers.push(tune(https));
    const reload = (): void => {
      try {
        https!.setSecureContext(readTls(tls));
        options.log.info("TLS certificate reloaded", { certFile: tls.certFile });
      } catch (err) {
        options.log.error("TLS certificate reload failed; keeping the previous one", { error: (err as Error).message });
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
  options.log.info("hook server listening", { port: options.port, ...(options.tls ? { tlsPort: options.tls.port } : {}) });
  return {
    servers,
    close: async () => {
      if (options.tls) unwatchFile(options.tls.certFile);
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
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
    throw new Error("TLS needs TLS_PORT, TLS_CERT_FILE and TLS_KEY_FILE together (e.g. 8443, /etc/cstor-pool-hooks/tls/tls.crt, .../tls.key)");
  }
  return { port: Number(TLS_PORT), certFile: TLS_CERT_FILE, keyFile: TLS_KEY_FILE };
}
