// The HTTP side of the project's node processes (node daemon, pool agent, volume target): /metrics from the
// process's own registry and plain-text probes, each answering 200 or 503 with a one-line reason. Nothing else is
// served.
import { createServer, type Server } from "node:http";
import type { Registry } from "prom-client";

export interface ProbeResult {
  ok: boolean;
  /** Why, in one line: what the kubelet records and `kubectl describe pod` shows on a failed probe. */
  message: string;
}

export function probeServer(registry: Registry, probes: Readonly<Record<string, () => ProbeResult>>): Server {
  return createServer((request, response) => {
    const path = (request.url ?? "").split("?")[0];
    if (path === "/metrics") {
      void registry.metrics().then((body) => {
        response.writeHead(200, { "Content-Type": registry.contentType });
        response.end(body);
      });
      return;
    }
    const probe = Object.hasOwn(probes, path) ? probes[path] : undefined;
    if (!probe) {
      response.writeHead(404).end();
      return;
    }
    const result = probe();
    response.writeHead(result.ok ? 200 : 503, { "Content-Type": "text/plain" });
    response.end(`${result.message}\n`);
  });
}
