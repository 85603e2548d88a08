// The endpoints the kubelet and Prometheus read (/healthz, /readyz, /metrics), and what draining on SIGTERM
// does to every other answer.
import type { Express, Request, Response } from "express";
import type { Registry } from "prom-client";

/** Closes the connection after an answer while the server drains. */
export type CloseIfDraining = (res: Response) => void;

/**
 * While draining, an answer is its connection's last: the client reconnects (to another replica) and the
 * drain can end.
 */
export function closeIfDraining(isReady: () => boolean): CloseIfDraining {
  return (res) => {
    if (!isReady()) res.setHeader("Connection", "close");
  };
}

export function mountProbes(app: Express, probes: { registry: Registry; isReady: () => boolean }): void {
  const getOnly = (path: string, handler: (req: Request, res: Response) => void | Promise<void>): void => {
    app.get(path, handler);
    app.all(path, (req, res) => {
      res.setHeader("Allow", "GET, HEAD");
      res.status(405).json({ error: `${req.method} is not allowed on ${path}; use GET` });
    });
  };
  getOnly("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  getOnly("/readyz", (_req, res) => {
    if (probes.isReady()) res.json({ status: "ready" });
    else res.status(503).json({ status: "draining" });
  });
  getOnly("/metrics", async (_req, res) => {
    res.setHeader("Content-Type", probes.registry.contentType);
    res.send(await probes.registry.metrics());
  });
}
