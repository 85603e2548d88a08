// The daemon's Kubernetes calls against a real kube-apiserver (testkit/kube.ts): merge-patched status
// through the subresource, finalizer patches that touch only ours, Events, claim annotations, the watch.
import { expect } from "chai";
import { ANNOTATION, API_VERSION, FINALIZER, KIND, LABEL } from "../../api/constants.js";
import type { CSPI } from "../../api/types.js";
import { createKubeApi, type KubeApi } from "../../node-daemon/kube.js";
import { kubeCluster, repoPath, type KubeCluster } from "../../testkit/kube.js";
import { cspiFor } from "../../testkit/zfs.js";

const NAMESPACE = "node-daemon-api";

describe("node-daemon Kubernetes calls (real kube-apiserver)", function () {
  this.timeout(180_000);
  let cluster: KubeCluster;
  let api: KubeApi;

  before(async () => {
    cluster = await kubeCluster();
    await cluster.kubectl(["apply", "--server-side", "-k", repoPath("metacontroller/crds/ndm")]);
    await cluster.kubectl(["apply", "--server-side", "-k", repoPath("metacontroller/crds")]);
    await cluster.kubectl([
      "wait",
      "--for=condition=Established",
      "--timeout=60s",
      "crd/cstorpoolinstances.openebs.io",
      "crd/blockdeviceclaims.openebs.io",
      "crd/cstorvolumereplicas.openebs.io",
    ]);
    await cluster.kubectl(["create", "namespace", NAMESPACE], { allowFailure: true });
    api = createKubeApi(cluster.kubeConfig());
  });

  async function created(name: string, finalizers?: string[]): Promise<CSPI> {
    const cspi = cspiFor(name, "node-a", [{ type: "stripe", devices: ["/dev/sdb"] }]);
    cspi.metadata = { name, namespace: NAMESPACE, ...(finalizers ? { finalizers } : {}) };
    await cluster.kubectl(["create", "-f", "-"], { input: JSON.stringify(cspi) });
    return (await api.listCspis({ namespace: NAMESPACE })).items.find((c) => c.metadata.name === name)!;
  }

  it("patches status through the subresource as a merge patch, null removing a field", async () => {
    const cspi = await created("status-1");
    await api.patchCspiStatus(NAMESPACE, "status-1", {
      phase: "ONLINE",
      importedOn: "node-a",
      capacity: { total: "1Gi", free: "1Gi", used: "0" },
      lastUpdateTime: "2026-03-01T12:00:00Z",
    });
    const after = await api.patchCspiStatus(NAMESPACE, "status-1", { capacity: null, importedOn: "" });
    expect(after.status).to.deep.equal({
      phase: "ONLINE",
      importedOn: "",
      lastUpdateTime: "2026-03-01T12:00:00Z",
    });
    expect(after.spec).to.deep.equal(cspi.spec);
  });

  it("a status patch naming a resourceVersion applies only to that version: after another writer's status it is refused with 409, and the CSPI read again names the new one", async () => {
    const cspi = await created("status-2");
    const first = await api.patchCspiStatus(
      NAMESPACE,
      "status-2",
      { phase: "ONLINE" },
      cspi.metadata.resourceVersion,
    );
    // Another writer (cspi-sync) meanwhile.
    await api.patchCspiStatus(NAMESPACE, "status-2", {
      conditions: [
        {
          type: "PodAvailable",
          status: "True",
          reason: "PoolPodAvailable",
          message: "up",
          lastTransitionTime: "2026-03-01T12:00:00Z",
        },
      ],
    });
    const refused = await api
      .patchCspiStatus(NAMESPACE, "status-2", { conditions: [] }, first.metadata.resourceVersion)
      .then(
        () => undefined,
        (error: { code?: number }) => error.code,
      );
    expect(refused).to.equal(409);
    const fresh = (await api.getCspi(NAMESPACE, "status-2"))!;
    expect(fresh.status?.conditions?.map((c) => c.type)).to.deep.equal(["PodAvailable"]);
    expect(
      (
        await api.patchCspiStatus(
          NAMESPACE,
          "status-2",
          { phase: "DEGRADED" },
          fresh.metadata.resourceVersion,
        )
      ).status,
    ).to.include({ phase: "DEGRADED" });
    expect(await api.getCspi(NAMESPACE, "status-gone")).to.equal(undefined);
  });

  it("adds and removes only its own finalizer, keeping another controller's", async () => {
    const cspi = await created("fin-1", ["example.com/other"]);
    const added = await api.addFinalizer(cspi, FINALIZER.poolProtection);
    expect(added.metadata.finalizers).to.deep.equal(["example.com/other", FINALIZER.poolProtection]);
    const removed = await api.removeFinalizer(added, FINALIZER.poolProtection);
    expect(removed!.metadata.finalizers).to.deep.equal(["example.com/other"]);
  });

  it("adds its finalizer when there is none, and a deleted CSPI goes once it is removed", async () => {
    const cspi = await created("fin-2");
    const added = await api.addFinalizer(cspi, FINALIZER.poolProtection);
    expect(added.metadata.finalizers).to.deep.equal([FINALIZER.poolProtection]);
    await cluster.kubectl(["delete", "cspi", "fin-2", "-n", NAMESPACE, "--wait=false"]);
    const deleting = (await api.listCspis({ namespace: NAMESPACE })).items.find(
      (c) => c.metadata.name === "fin-2",
    )!;
    expect(deleting.metadata.deletionTimestamp).to.be.a("string");
    expect(await api.removeFinalizer(deleting, FINALIZER.poolProtection)).to.satisfy(
      (c: CSPI | undefined) => !c || !c.metadata.finalizers?.length,
    );
    expect((await api.listCspis({ namespace: NAMESPACE })).items.map((c) => c.metadata.name)).to.not.include(
      "fin-2",
    );
  });

  it("a lost-replica release is exact: of two daemons releasing the same CVR as they judged it, the second is refused (the CVR is gone: 404), not told it released it", async () => {
    const name = "lost-release-1";
    const cvr = {
      apiVersion: API_VERSION,
      kind: KIND.cvr,
      metadata: {
        name,
        namespace: NAMESPACE,
        finalizers: [FINALIZER.replicaProtection],
        labels: { [LABEL.replicaPool]: "gone-pool", [LABEL.replicaVolume]: "pvc-1" },
      },
      spec: { capacity: "1Gi", replicaId: "r-1" },
    };
    await cluster.kubectl(["create", "-f", "-"], { input: JSON.stringify(cvr) });
    await cluster.kubectl(["delete", "cvr", name, "-n", NAMESPACE, "--wait=false"]);
    const judged = (await api.listCvrs({ namespace: NAMESPACE })).items.find(
      (c) => c.metadata.name === name,
    )!;
    expect(judged.metadata.deletionTimestamp).to.be.a("string");
    expect(await api.removeCvrFinalizer(judged, FINALIZER.replicaProtection, { exactly: true })).to.equal(
      undefined,
    );
    const second = await api.removeCvrFinalizer(judged, FINALIZER.replicaProtection, { exactly: true }).then(
      () => "released",
      (error: { code?: number }) => error.code,
    );
    expect(second, "the second daemon's release").to.equal(404);
  });

  it("watches CSPI changes from a resourceVersion", async () => {
    await created("watch-1");
    const { resourceVersion } = await api.listCspis({ namespace: NAMESPACE });
    const seen: string[] = [];
    const handle = await api.watchCspis({ namespace: NAMESPACE }, resourceVersion, (type, c) =>
      seen.push(`${type} ${c.metadata.name} ${c.status?.phase ?? ""}`),
    );
    await api.patchCspiStatus(NAMESPACE, "watch-1", { phase: "DEGRADED" });
    for (let i = 0; i < 50 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    handle.stop();
    await handle.done;
    expect(seen).to.deep.equal(["MODIFIED watch-1 DEGRADED"]);
  });

  it("a watch the apiserver refuses ends in a failure the daemon sees (it lists again), not as a clean end", async () => {
    const handle = await api.watchCspis({ namespace: NAMESPACE }, "not-a-resource-version", () => undefined);
    const ending = await handle.done.then(
      () => "ended cleanly",
      (error: Error) => `failed: ${error.message}`,
    );
    expect(ending).to.match(/^failed: /);
  });

  it("records an Event on the CSPI", async () => {
    const cspi = await created("event-1");
    await api.createEvent(
      cspi,
      {
        type: "Warning",
        reason: "DeviceMissing",
        message: "block device bd-x (/dev/x) does not exist on this node",
      },
      { component: "cstor-pool-node-daemon", host: "node-a" },
      new Date(),
    );
    const events = await cluster.kubectl([
      "get",
      "events",
      "-n",
      NAMESPACE,
      "--field-selector",
      "involvedObject.name=event-1",
      "-o",
      "json",
    ]);
    const items = JSON.parse(events.stdout).items as {
      reason: string;
      type: string;
      involvedObject: { kind: string };
      source: { host: string };
    }[];
    expect(items.map((e) => [e.type, e.reason, e.involvedObject.kind, e.source.host])).to.deep.equal([
      ["Warning", "DeviceMissing", KIND.cspi, "node-a"],
    ]);
  });

  it("reads claim annotations by CSPI label and removes only the predecessor annotation", async () => {
    const claim = {
      apiVersion: API_VERSION,
      kind: KIND.blockDeviceClaim,
      metadata: {
        name: "bdc-bd-new",
        namespace: NAMESPACE,
        labels: { [LABEL.cspi]: "pool-x" },
        annotations: { [ANNOTATION.bdPredecessor]: "bd-old", "example.com/keep": "yes" },
      },
      spec: { blockDeviceName: "bd-new" },
    };
    await cluster.kubectl(["create", "-f", "-"], { input: JSON.stringify(claim) });
    expect(await api.listClaimAnnotations(NAMESPACE, "pool-x")).to.deep.equal({
      "bd-new": claim.metadata.annotations,
    });
    await api.removeClaimAnnotation(NAMESPACE, "bdc-bd-new", ANNOTATION.bdPredecessor);
    expect(await api.listClaimAnnotations(NAMESPACE, "pool-x")).to.deep.equal({
      "bd-new": { "example.com/keep": "yes" },
    });
  });
});
