// The driver's gRPC server on a unix socket (docs/adr/0047-the-csi-driver-one-writer-per-volume.md). It takes
// each service's handlers from outside (the identity, the controller, the node), registers only the RPCs
// csi/protocol.ts declares, and around every call: one call per volume or snapshot at a time (a second gets
// ABORTED), the call's deadline and cancellation handed to the handler, a CsiError answered with its code and
// anything else as INTERNAL, one log line without the request's secrets, and the call counted in the metrics.
import { lstat, mkdir, rm } from "node:fs/promises";
import { dirname } from "node:path";
import {
  Server,
  ServerCredentials,
  status,
  type ServerUnaryCall,
  type sendUnaryData,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import type { Logger } from "../runtime/log.js";
import { CsiError, describeError } from "./errors.js";
import type { CsiMetrics } from "./metrics.js";
import {
  methodNames,
  serviceDefinition,
  type MethodName,
  type RequestOf,
  type ResponseOf,
  type ServiceName,
} from "./protocol.js";

/** What a handler gets besides its request. */
export interface CallContext {
  /** Aborted when the caller cancels or its deadline passes: a handler that waits stops waiting. */
  signal: AbortSignal;
  /** The caller's deadline (ms since the epoch), or undefined when it set none. */
  deadline: number | undefined;
  logger: Logger;
}

export type Handler<S extends ServiceName, M extends MethodName<S>> = (
  request: RequestOf<S, M>,
  context: CallContext,
) => Promise<ResponseOf<S, M>>;

/** Every RPC the protocol declares for a service, each answered by one function. */
export type Handlers<S extends ServiceName> = { [M in MethodName<S>]: Handler<S, M> };

/** Identity always; Controller in the controller mode, Node in the node mode. */
export interface CsiServices {
  Identity: Handlers<"Identity">;
  Controller?: Handlers<"Controller">;
  Node?: Handlers<"Node">;
}

/** RPCs that change nothing: they run beside a call on the same volume. */
const READ_ONLY = new Set<string>(["ValidateVolumeCapabilities", "NodeGetVolumeStats", "ListSnapshots"]);
/** RPCs asked every few seconds by the sidecars and the kubelet: logged at debug when they succeed. */
const FREQUENT = new Set<string>([
  "Probe",
  "GetPluginInfo",
  "GetPluginCapabilities",
  "ControllerGetCapabilities",
  "NodeGetCapabilities",
  "NodeGetInfo",
  "NodeGetVolumeStats",
  "GetCapacity",
]);

/** The socket path of a CSI endpoint: "unix:///csi/csi.sock", "unix:/csi/csi.sock" or "/csi/csi.sock". */
export function socketPath(endpoint: string): string {
  const path = endpoint.startsWith("unix://")
    ? endpoint.slice("unix://".length)
    : endpoint.startsWith("unix:")
      ? endpoint.slice("unix:".length)
      : endpoint;
  if (!path.startsWith("/"))
    throw new CsiError(
      status.INVALID_ARGUMENT,
      `CSI endpoint ${JSON.stringify(endpoint)} is not a unix socket: write unix:///<absolute path>, e.g. unix:///csi/csi.sock`,
    );
  return path;
}

export interface CsiServer {
  /** The socket the server listens on. */
  socket: string;
  /** Refuses new calls, lets running ones finish for at most `graceMs`, then closes and removes the socket. */
  stop(graceMs: number): Promise<void>;
}

export interface CsiServerOptions {
  endpoint: string;
  services: CsiServices;
  logger: Logger;
  metrics: CsiMetrics;
}

export async function startCsiServer(options: CsiServerOptions): Promise<CsiServer> {
  const socket = socketPath(options.endpoint);
  const server = new Server();
  const busy = new Set<string>();
  for (const service of Object.keys(options.services) as ServiceName[]) {
    const handlers = options.services[service];
    if (handlers)
      server.addService(serviceDefinition(service), implementation(service, handlers, busy, options));
  }
  await mkdir(dirname(socket), { recursive: true });
  await removeStaleSocket(socket);
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, ServerCredentials.createInsecure(), (error) =>
      error ? reject(error) : resolve(),
    ),
  );
  return {
    socket,
    async stop(graceMs) {
      const timer = setTimeout(() => server.forceShutdown(), graceMs);
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      clearTimeout(timer);
      await rm(socket, { force: true });
    },
  };
}

/** A socket a previous process left (a killed driver never removes it) would make bind fail with EADDRINUSE. */
async function removeStaleSocket(socket: string): Promise<void> {
  const stat = await lstat(socket).catch(() => undefined);
  if (!stat) return;
  if (!stat.isSocket())
    throw new Error(`${socket} exists and is not a socket: remove it, or point --endpoint elsewhere`);
  await rm(socket);
}

function implementation<S extends ServiceName>(
  service: S,
  handlers: Handlers<S>,
  busy: Set<string>,
  options: CsiServerOptions,
): UntypedServiceImplementation {
  const entries = methodNames(service).map((method) => {
    const handler = handlers[method] as Handler<S, typeof method>;
    const unary = (
      call: ServerUnaryCall<RequestOf<S, typeof method>, unknown>,
      callback: sendUnaryData<unknown>,
    ) =>
      void serve({ method, handler, call, busy, options }).then(
        (response) => callback(null, response),
        (error: CsiError) => callback({ code: error.code, details: error.message }),
      );
    return [method, unary] as const;
  });
  return Object.fromEntries(entries);
}

interface Serving<S extends ServiceName, M extends MethodName<S>> {
  method: M;
  handler: Handler<S, M>;
  call: ServerUnaryCall<RequestOf<S, M>, unknown>;
  busy: Set<string>;
  options: CsiServerOptions;
}

/** One call: the volume's turn, the handler, the log line and the metrics; rejects only with a CsiError. */
async function serve<S extends ServiceName, M extends MethodName<S>>(
  serving: Serving<S, M>,
): Promise<ResponseOf<S, M>> {
  const { method, handler, call, busy, options } = serving;
  const request = call.request;
  const subject = subjectOf(method, request);
  const logger = options.logger.child({ rpc: method, ...(subject ? { [subject.kind]: subject.id } : {}) });
  const started = Date.now();
  const controller = new AbortController();
  call.on("cancelled", () => controller.abort());
  const deadline = deadlineOf(call);
  const expiry =
    deadline === undefined ? undefined : setTimeout(() => controller.abort(), deadline - started);
  const turn = subject && !READ_ONLY.has(method) ? `${subject.kind} ${subject.id}` : undefined;
  let held = false;
  try {
    if (turn && busy.has(turn))
      throw new CsiError(
        status.ABORTED,
        `an operation on ${turn} is in progress; this call is not run (retry it once that one answers)`,
      );
    if (turn) {
      busy.add(turn);
      held = true;
    }
    const response = await handler(request, { signal: controller.signal, deadline, logger });
    options.metrics.call(method, "OK", Date.now() - started);
    if (FREQUENT.has(method)) logger.debug("answered", { ms: Date.now() - started });
    else logger.info("answered", { ms: Date.now() - started });
    return response;
  } catch (error) {
    const failure = error instanceof CsiError ? error : new CsiError(status.INTERNAL, describeError(error));
    options.metrics.call(method, status[failure.code], Date.now() - started);
    logger.warn("refused", {
      code: status[failure.code],
      message: failure.message,
      ms: Date.now() - started,
    });
    throw failure;
  } finally {
    if (held && turn) busy.delete(turn);
    clearTimeout(expiry);
  }
}

/**
 * What a request is about: a snapshot (its id, or for CreateSnapshot the name that becomes one) or a volume (its
 * id, or for CreateVolume the name that becomes one).
 */
function subjectOf(
  method: string,
  request: unknown,
): { kind: "volume" | "snapshot"; id: string } | undefined {
  const fields = (request ?? {}) as { volume_id?: unknown; snapshot_id?: unknown; name?: unknown };
  const kind = method.endsWith("Snapshot") || method.endsWith("Snapshots") ? "snapshot" : "volume";
  const id = kind === "snapshot" ? fields.snapshot_id || fields.name : fields.volume_id || fields.name;
  return typeof id === "string" && id ? { kind, id } : undefined;
}

function deadlineOf(call: { getDeadline(): Date | number }): number | undefined {
  const deadline = call.getDeadline();
  const ms = deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isFinite(ms) ? ms : undefined;
}
