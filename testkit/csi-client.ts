// A CSI client over the driver's unix socket, typed by csi/protocol.ts: what the sidecars and the kubelet are to
// the driver, for tests. A refusal rejects with grpc-js' ServiceError (its `code` and `details`).
import { credentials, makeClientConstructor, type Client, type ServiceError } from "@grpc/grpc-js";
import {
  serviceDefinition,
  type MethodName,
  type RequestOf,
  type ResponseOf,
  type ServiceName,
} from "../csi/protocol.js";

type UnaryMethod = (
  request: unknown,
  options: { deadline?: number },
  callback: (error: ServiceError | null, response: unknown) => void,
) => void;

export class CsiClient {
  private readonly clients = new Map<ServiceName, Client>();

  constructor(private readonly socket: string) {}

  call<S extends ServiceName, M extends MethodName<S>>(
    service: S,
    method: M,
    request: RequestOf<S, M>,
    options: { timeoutMs?: number } = {},
  ): Promise<ResponseOf<S, M>> {
    const client = this.client(service) as unknown as Record<string, UnaryMethod>;
    const deadline = options.timeoutMs === undefined ? {} : { deadline: Date.now() + options.timeoutMs };
    return new Promise((resolve, reject) =>
      client[method].call(client, request, deadline, (error, response) =>
        error ? reject(error) : resolve(response as ResponseOf<S, M>),
      ),
    );
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }

  private client(service: ServiceName): Client {
    let client = this.clients.get(service);
    if (!client) {
      const Constructor = makeClientConstructor(serviceDefinition(service), service);
      client = new Constructor(`unix://${this.socket}`, credentials.createInsecure());
      this.clients.set(service, client);
    }
    return client;
  }
}
