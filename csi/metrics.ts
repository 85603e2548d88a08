// The driver's Prometheus metrics on its own registry, served on /metrics beside /healthz: every call by RPC
// and the gRPC code it was answered with, and how long calls took. Names follow the project's conventions
// (docs/adr/0031-metrics-state-sets-error-counts-as-gauges-volume.md).
import { Counter, Histogram, Registry } from "prom-client";

export interface CsiMetrics {
  registry: Registry;
  /** A call answered: its RPC, its gRPC code name ("OK", "ABORTED", ...), how long it took. */
  call(method: string, code: string, ms: number): void;
}

export function createCsiMetrics(): CsiMetrics {
  const registry = new Registry();
  const calls = new Counter({
    name: "cstor_csi_calls_total",
    help: "CSI calls answered, by RPC and gRPC status code.",
    labelNames: ["method", "code"],
    registers: [registry],
  });
  const seconds = new Histogram({
    name: "cstor_csi_call_duration_seconds",
    help: "How long CSI calls took to answer, by RPC (CreateVolume and ControllerExpandVolume wait for the volume).",
    labelNames: ["method"],
    buckets: [0.01, 0.05, 0.25, 1, 5, 15, 60, 300],
    registers: [registry],
  });
  return {
    registry,
    call(method, code, ms) {
      calls.inc({ method, code });
      seconds.observe({ method }, ms / 1000);
    },
  };
}
