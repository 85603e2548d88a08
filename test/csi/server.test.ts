// The driver's gRPC server on a real unix socket, called by a real grpc-js client as the sidecars call it:
// the identity it answers, a refusal's code and message, one call per volume at a time, the caller's deadline
// reaching the handler, an RPC nobody declared, a socket a killed driver left, and no secret in the log.
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, makeGenericClientConstructor, status, type ServiceError } from "@grpc/grpc-js";
import { expect } from "chai";
import { CsiError } from "../../csi/errors.js";
import { identityService } from "../../csi/identity.js";
import { CSI } from "../../api/constants.js";
import { createCsiMetrics } from "../../csi/metrics.js";
import { startCsiServer, type CsiServer, type Handlers } from "../../csi/server.js";
import { createLogger } from "../../runtime/log.js";
import { CsiClient } from "../../testkit/csi-client.js";

const refuseAll = (): Handlers<"Controller"> =>
  new Proxy({} as Handlers<"Controller">, {
    get: () => async () => {
      throw new CsiError(status.UNIMPLEMENTED, "not in this test");
    },
  });

describe("csi: the gRPC server on a unix socket", () => {
  let dir: string;
  let server: CsiServer;
  let client: CsiClient;
  const lines: string[] = [];
  const metrics = createCsiMetrics();
  let release: () => void = () => {};
  /** CreateVolume calls that reached the handler and wait there for release(). */
  let waiting = 0;
  let lastSignal: AbortSignal | undefined;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "csi-server-"));
    // What a killed driver leaves behind: a socket file nobody listens on.
    const stale = createServer().listen(join(dir, "csi.sock"));
    await new Promise((resolve) => stale.once("listening", resolve));
    stale.close();
    const controller: Handlers<"Controller"> = {
      ...refuseAll(),
      CreateVolume: async (request) => {
        if (request.name === "boom") throw new Error("the apiserver went away");
        if (request.name === "refused")
          throw new CsiError(status.OUT_OF_RANGE, "too big for CStorPoolCluster x");
        waiting++;
        await new Promise<void>((resolve) => (release = resolve));
        return { volume: { volume_id: request.name, capacity_bytes: 1 } };
      },
      CreateSnapshot: async (request) => {
        waiting++;
        await new Promise<void>((resolve) => (release = resolve));
        return { snapshot: { snapshot_id: request.name, source_volume_id: request.source_volume_id } };
      },
      DeleteVolume: async (request, context) => {
        lastSignal = context.signal;
        await new Promise((resolve) => context.signal.addEventListener("abort", resolve));
        throw new CsiError(status.UNAVAILABLE, `waited for ${request.volume_id} until the deadline`);
      },
    };
    server = await startCsiServer({
      endpoint: `unix://${join(dir, "csi.sock")}`,
      services: {
        Identity: identityService({ version: "9.9.9", probe: async () => {} }),
        Controller: controller,
      },
      logger: createLogger({ level: "debug", sink: (line) => lines.push(line) }),
      metrics,
    });
    client = new CsiClient(server.socket);
  });

  after(async () => {
    client?.close();
    await server?.stop(1000);
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers the identity: the driver's name, its version, a controller service that expands online", async () => {
    expect(await client.call("Identity", "GetPluginInfo", {})).to.include({
      name: CSI.driverName,
      vendor_version: "9.9.9",
    });
    const { capabilities } = await client.call("Identity", "GetPluginCapabilities", {});
    expect(capabilities).to.deep.include({ service: { type: "CONTROLLER_SERVICE" }, volume_expansion: null });
    expect(capabilities).to.deep.include({ service: null, volume_expansion: { type: "ONLINE" } });
    expect(await client.call("Identity", "Probe", {})).to.deep.equal({ ready: { value: true } });
  });

  it("answers a refusal with its code and message, and anything else as INTERNAL", async () => {
    const refused = await client
      .call("Controller", "CreateVolume", { name: "refused" })
      .catch((e: ServiceError) => e);
    expect(refused).to.include({ code: status.OUT_OF_RANGE, details: "too big for CStorPoolCluster x" });
    const broken = await client
      .call("Controller", "CreateVolume", { name: "boom" })
      .catch((e: ServiceError) => e);
    expect(broken).to.include({ code: status.INTERNAL, details: "the apiserver went away" });
  });

  it("runs one call per volume: a second one meanwhile is ABORTED, the next after it answers runs", async () => {
    const first = client.call("Controller", "CreateVolume", { name: "pvc-1" });
    await waitFor(() => waiting === 1);
    const second = await client
      .call("Controller", "CreateVolume", { name: "pvc-1" })
      .catch((e: ServiceError) => e);
    expect(second).to.include({ code: status.ABORTED });
    expect((second as ServiceError).details).to.match(/operation on volume pvc-1 is in progress/);
    release();
    expect((await first).volume?.volume_id).to.equal("pvc-1");
    const third = client.call("Controller", "CreateVolume", { name: "pvc-1" });
    await waitFor(() => waiting === 2);
    release();
    expect((await third).volume?.volume_id).to.equal("pvc-1");
  });

  it("runs one call per snapshot: deleting a snapshot while it is being made is ABORTED", async () => {
    const before = waiting;
    const making = client.call("Controller", "CreateSnapshot", { name: "snap-1", source_volume_id: "pvc-3" });
    await waitFor(() => waiting === before + 1);
    const deleting = await client
      .call("Controller", "DeleteSnapshot", { snapshot_id: "snap-1" })
      .catch((e: ServiceError) => e);
    expect(deleting).to.include({ code: status.ABORTED });
    expect((deleting as ServiceError).details).to.match(/operation on snapshot snap-1 is in progress/);
    release();
    expect((await making).snapshot?.snapshot_id).to.equal("snap-1");
    const logged = lines.map((line) => JSON.parse(line)).find((l) => l.rpc === "CreateSnapshot");
    expect(logged, "logged by the snapshot it is about").to.include({ snapshot: "snap-1" });
  });

  it("hands the caller's deadline to the handler, which stops waiting when it passes", async () => {
    const answer = await client
      .call("Controller", "DeleteVolume", { volume_id: "pvc-2" }, { timeoutMs: 300 })
      .catch((e: ServiceError) => e);
    expect(answer).to.include({ code: status.DEADLINE_EXCEEDED });
    await waitFor(() => lastSignal?.aborted === true);
  });

  it("answers an RPC the protocol does not declare UNIMPLEMENTED", async () => {
    const Generic = makeGenericClientConstructor({}, "Controller");
    const raw = new Generic(`unix://${server.socket}`, credentials.createInsecure());
    const error = await new Promise<ServiceError | null>((resolve) =>
      raw.makeUnaryRequest(
        "/csi.v1.Controller/ListVolumes",
        (value: Buffer) => value,
        (value: Buffer) => value,
        Buffer.alloc(0),
        (e) => resolve(e),
      ),
    );
    raw.close();
    expect(error).to.include({ code: status.UNIMPLEMENTED });
  });

  it("logs each call without its secrets, and counts it by RPC and code", async () => {
    await client
      .call("Controller", "CreateVolume", { name: "refused", secrets: { password: "s3cret-value" } })
      .catch(() => undefined);
    expect(lines.join("\n")).not.to.include("s3cret-value");
    expect(
      lines.some((l) => l.includes('"rpc":"CreateVolume"') && l.includes('"code":"OUT_OF_RANGE"')),
    ).to.equal(true);
    const text = await metrics.registry.metrics();
    expect(text).to.include('cstor_csi_calls_total{method="CreateVolume",code="ABORTED"} 1');
    expect(text).to.include('cstor_csi_calls_total{method="GetPluginInfo",code="OK"} 1');
  });

  it("removes its socket when it stops", async () => {
    const other = await startCsiServer({
      endpoint: join(dir, "other.sock"),
      services: { Identity: identityService({ version: "1", probe: async () => {} }) },
      logger: createLogger({ level: "silent" }),
      metrics: createCsiMetrics(),
    });
    expect(existsSync(other.socket)).to.equal(true);
    await other.stop(1000);
    expect(existsSync(other.socket)).to.equal(false);
  });
});

async function waitFor(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!done()) throw new Error("the condition never held");
}
