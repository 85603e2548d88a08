// Events on the CSPC, end to end: the real hook server process, as its ServiceAccount with the shipped RBAC,
// against the real apiserver. A cspc-sync request whose CSPC has a refused edit is answered, then a Warning
// Event on that CSPC says what is refused and the fix; the same request again counts the Event up.
import { expect } from "chai";
import { KIND } from "../../api/constants.js";
import type { KubeObject } from "../../api/types.js";
import { HookServerProcess } from "../../testkit/hook-server-process.js";
import { INSTALL_NAMESPACE, projectInstalled, waitUntil, type KubeCluster } from "../../testkit/kube.js";
import { goldenCases } from "../support/golden.js";

const NS = INSTALL_NAMESPACE;

interface CoreV1Event {
  type: string;
  reason: string;
  message: string;
  count: number;
  involvedObject: { kind: string; name: string; uid?: string };
  source: { component: string };
}

describe("Events on the CSPC (real hook server, real apiserver)", function () {
  this.timeout(180_000);
  let cluster: KubeCluster;
  let hooks: HookServerProcess;
  let request: { parent: KubeObject };
  let uid: string;

  before(async () => {
    cluster = await projectInstalled();
    // The golden case's request: a CSPC whose pool pools-fbf7e9 lost block device c2 from its spec.
    request = goldenCases("cspc-sync")
      .find((c) => c.name === "day2-rejected-device-removed")!
      .read("request.yaml") as typeof request;
    const { apiVersion, kind, metadata, spec } = request.parent;
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: JSON.stringify({ apiVersion, kind, metadata: { name: metadata.name, namespace: NS }, spec }),
    });
    const stored = JSON.parse(
      (await cluster.kubectl(["get", "cspc", metadata.name!, "-n", NS, "-o", "json"])).stdout,
    ) as KubeObject;
    uid = stored.metadata.uid!;
    // What Metacontroller would send: the stored CSPC (its uid), with the status the request carries.
    request.parent = { ...request.parent, metadata: stored.metadata };
    hooks = await HookServerProcess.start(cluster, NS);
  });

  after(async () => {
    await hooks?.kill();
    await cluster?.kubectl([
      "delete",
      "cspc",
      request.parent.metadata.name!,
      "-n",
      NS,
      "--ignore-not-found",
      "--wait=false",
    ]);
  });

  const sync = async (): Promise<void> => {
    const response = await fetch(`${hooks.url}/hooks/cspc-sync`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(request),
    });
    const answer = (await response.json()) as { status: { conditions: { type: string; status: string }[] } };
    expect(response.status, JSON.stringify(answer)).to.equal(200);
    expect(answer.status.conditions, "the answer says it too").to.deep.include.members([
      { ...answer.status.conditions.find((c) => c.type === "PoolSpecRejected"), status: "True" },
    ]);
  };
  const events = async (): Promise<CoreV1Event[]> => {
    const selector = `involvedObject.kind=${KIND.cspc},involvedObject.name=${request.parent.metadata.name}`;
    return (
      await cluster.request(
        cluster.admin,
        "GET",
        `/api/v1/namespaces/${NS}/events?fieldSelector=${encodeURIComponent(selector)}`,
      )
    ).body.items;
  };
  const rejected = async () => (await events()).filter((e) => e.reason === "ChangesRejected");

  it("writes a Warning on the CSPC with the fix, after answering", async () => {
    await sync();
    await waitUntil(
      async () => (await rejected()).length > 0,
      30_000,
      () => `no ChangesRejected Event; hook server: ${hooks.tail()}`,
    );
    const [event] = await rejected();
    expect(event).to.deep.include({ type: "Warning", count: 1 });
    expect(event.message).to.equal(
      "spec.pools[2] (nodeSelector kubernetes.io/hostname=node-c) (pool pools-fbf7e9): raidGroups[0] (stripe: c1, c2): block device c2 was removed; data on it would be lost: put it back",
    );
    expect(event.involvedObject).to.deep.include({ kind: KIND.cspc, uid });
    expect(event.source.component).to.equal("cstor-pool-hooks");
  });

  it("the same request again counts the Event up instead of creating a second one", async () => {
    await sync();
    await waitUntil(
      async () => (await rejected()).some((e) => e.count === 2),
      30_000,
      () => `the Event was not counted up; hook server: ${hooks.tail()}`,
    );
    expect((await rejected()).map((e) => e.count)).to.deep.equal([2]);
    const metrics = await (await fetch(`${hooks.url}/metrics`)).text();
    expect(metrics).to.match(/cstor_hook_events_total\{hook="cspc-sync",outcome="created"\} 1\n/);
    expect(metrics).to.match(/cstor_hook_events_total\{hook="cspc-sync",outcome="incremented"\} 1\n/);
    expect(hooks.refusals(), "nothing refused or failed").to.deep.equal([]);
  });
});
