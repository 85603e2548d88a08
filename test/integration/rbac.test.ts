// Least privilege, proven against the real apiserver with the shipped RBAC and policy: each identity,
// authenticated by a ServiceAccount token, can do its whole job and is refused everything else.
import { expect } from "chai";
import { ANNOTATION, API_VERSION, FINALIZER, KIND, LABEL } from "../../api/constants.js";
import { kubeEventWriter } from "../../runtime/kube-event-writer.js";
import { createKubeApi } from "../../node-daemon/kube.js";
import { kubeTarget } from "../../volume-target/kube.js";
import {
  INSTALL_NAMESPACE,
  projectInstalled,
  repoPath,
  waitUntil,
  type Identity,
  type KubeCluster,
} from "../../testkit/kube.js";

const NS = INSTALL_NAMESPACE;
const OTHER_NS = "rbac-elsewhere";
const CSPI = "rbac-pool-a1b2";
const CLAIM = "bdc-rbac-new";
const DEVICE = "rbac-bd-new";
const crd = (plural: string, namespace = NS, name = "") =>
  `/apis/${API_VERSION}/namespaces/${namespace}/${plural}${name ? `/${name}` : ""}`;

function cspi(namespace: string): object {
  return {
    apiVersion: API_VERSION,
    kind: KIND.cspi,
    metadata: { name: CSPI, namespace, labels: { [LABEL.cspc]: "rbac", [LABEL.hostname]: "node-1" } },
    spec: {
      hostName: "node-1",
      nodeSelector: { [LABEL.hostname]: "node-1" },
      poolConfig: { compression: "off", roThresholdLimit: 85 },
      raidGroups: [
        {
          type: "stripe",
          blockDevices: [{ blockDeviceName: "rbac-bd-1", devLink: "/dev/sdb", capacity: 1073741824 }],
        },
      ],
    },
  };
}

const VOLUME = "rbac-vol";
const REPLICA = `${VOLUME}-${CSPI}`;
const SNAPSHOT = "rbac-snap";

/** A CStorVolumeSnapshot of the volume, as the CSI controller creates it. */
function snapshotObject(namespace: string, name = SNAPSHOT): object {
  return {
    apiVersion: API_VERSION,
    kind: KIND.cvsnap,
    metadata: {
      name,
      namespace,
      labels: { [LABEL.replicaVolume]: VOLUME },
      finalizers: [FINALIZER.replicaSnapshots],
    },
    spec: { volume: VOLUME },
  };
}

function volumeObjects(namespace: string): object[] {
  const labels = { [LABEL.persistentVolume]: VOLUME, [LABEL.cspc]: "rbac" };
  return [
    {
      apiVersion: API_VERSION,
      kind: KIND.cv,
      metadata: { name: VOLUME, namespace, labels },
      spec: {
        capacity: "1Gi",
        targetIP: "10.96.0.99",
        targetPort: "3260",
        targetPortal: "10.96.0.99:3260",
        iqn: `iqn.2016-09.com.openebs.cstor:${VOLUME}`,
        replicationFactor: 1,
        consistencyFactor: 1,
        desiredReplicationFactor: 1,
        replicaDetails: { knownReplicas: { "0123456789abcdef": CSPI } },
      },
    },
    {
      apiVersion: API_VERSION,
      kind: KIND.cvr,
      metadata: {
        name: REPLICA,
        namespace,
        labels: {
          ...labels,
          [LABEL.replicaPool]: CSPI,
          [LABEL.replicaVolume]: VOLUME,
        },
        annotations: { [ANNOTATION.rebuildingSince]: "2026-11-23T12:00:00Z" },
        finalizers: [FINALIZER.replicaProtection],
      },
      spec: { capacity: "1Gi", replicaId: "0123456789abcdef", targetIP: "10.96.0.99" },
    },
    snapshotObject(namespace),
  ];
}

const objects = [
  { apiVersion: "v1", kind: "Namespace", metadata: { name: OTHER_NS } },
  ...volumeObjects(NS),
  ...volumeObjects(OTHER_NS),
  cspi(NS),
  cspi(OTHER_NS),
  {
    apiVersion: API_VERSION,
    kind: KIND.blockDevice,
    metadata: { name: DEVICE, namespace: NS, labels: { [LABEL.hostname]: "node-1" } },
    spec: { path: "/dev/sdc", capacity: { storage: 1073741824 }, nodeAttributes: { nodeName: "node-1" } },
    status: { state: "Active", claimState: "Claimed" },
  },
  {
    apiVersion: API_VERSION,
    kind: KIND.blockDeviceClaim,
    metadata: {
      name: CLAIM,
      namespace: NS,
      labels: { [LABEL.cspc]: "rbac", [LABEL.cspi]: CSPI },
      annotations: { [ANNOTATION.bdPredecessor]: "rbac-bd-old", "example.com/note": "kept" },
    },
    spec: { blockDeviceName: DEVICE },
  },
  {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "rbac-secret", namespace: NS },
    stringData: { password: "x" },
  },
  { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "rbac-config", namespace: NS }, data: { a: "b" } },
  {
    apiVersion: API_VERSION,
    kind: KIND.cspc,
    metadata: { name: "rbac", namespace: NS },
    spec: {
      pools: [
        {
          nodeSelector: { [LABEL.hostname]: "node-1" },
          raidGroups: [{ type: "stripe", blockDevices: [{ blockDeviceName: "rbac-bd-1" }] }],
        },
      ],
    },
  },
];

/**
 * The apiserver starts enforcing a new ValidatingAdmissionPolicy a moment after it is created: until a dry-run
 * patch of `path` that the policy refuses is refused.
 */
async function untilEnforced(
  call: (method: string, path: string, body?: unknown) => Promise<{ status: number }>,
  path: string,
  refusedPatch: unknown,
): Promise<void> {
  await waitUntil(
    async () => (await call("PATCH", `${path}?dryRun=All`, refusedPatch)).status === 403,
    30_000,
    () => `the policy refusing that patch of ${path} is never enforced`,
  );
}

describe("integration: RBAC and policy for each identity, on a real kube-apiserver", function () {
  this.timeout(20 * 60_000);
  let cluster: KubeCluster;

  before(async () => {
    cluster = await projectInstalled();
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
  });

  describe("the node daemon (ServiceAccount cstor-pool-node)", () => {
    let node: Identity;
    const call = (method: string, path: string, body?: unknown, type = "application/merge-patch+json") =>
      cluster.request(node, method, path, body, type);

    before(async () => {
      node = await cluster.serviceAccount(NS, "cstor-pool-node");
      await untilEnforced(call, crd("blockdeviceclaims", NS, CLAIM), { spec: { blockDeviceName: "probe" } });
    });

    it("does its whole job through the daemon's own Kubernetes client (node-daemon/kube.ts)", async () => {
      const api = createKubeApi(cluster.kubeConfig(node));
      const { items, resourceVersion } = await api.listCspis({ namespace: NS });
      const cspi = items.find((i) => i.metadata.name === CSPI)!;
      expect(cspi.spec.hostName).to.equal("node-1");

      const events: string[] = [];
      const watching = await api.watchCspis({ namespace: NS }, resourceVersion, (type, object) =>
        events.push(`${type} ${object.metadata.name}`),
      );
      await cluster.request(
        cluster.admin,
        "PATCH",
        crd("cstorpoolinstances", NS, CSPI),
        { metadata: { labels: { watched: "yes" } } },
        "application/merge-patch+json",
      );
      await waitUntil(
        async () => events.length > 0,
        10_000,
        () => "no watch event",
      );
      watching.stop();
      expect(events[0]).to.equal(`MODIFIED ${CSPI}`);

      const status = {
        phase: "ONLINE" as const,
        capacity: { total: "1Gi", free: "1000Mi", used: "24Mi" },
        readOnly: false,
        lastUpdateTime: "2026-11-21T10:00:00Z",
      };
      const written = await api.patchCspiStatus(NS, CSPI, status);
      expect(written.status).to.deep.include(status);

      const protectedCspi = await api.addFinalizer(written, FINALIZER.poolProtection);
      expect(protectedCspi.metadata.finalizers).to.deep.equal([FINALIZER.poolProtection]);
      const released = await api.removeFinalizer(protectedCspi, FINALIZER.poolProtection);
      expect(released?.metadata.finalizers ?? []).to.deep.equal([]);

      await api.createEvent(
        released!,
        { type: "Normal", reason: "PoolImported", message: "imported" },
        { component: "cstor-pool-node", host: "node-1" },
        new Date(),
      );
      const recorded = await cluster.request(
        cluster.admin,
        "GET",
        `/api/v1/namespaces/${NS}/events?fieldSelector=involvedObject.name=${CSPI}`,
      );
      expect(recorded.body.items.map((e: { reason: string }) => e.reason)).to.include("PoolImported");

      expect(await api.listClaimAnnotations(NS, CSPI)).to.deep.equal({
        [DEVICE]: { [ANNOTATION.bdPredecessor]: "rbac-bd-old", "example.com/note": "kept" },
      });
      await api.removeClaimAnnotation(NS, CLAIM, ANNOTATION.bdPredecessor);
      expect(await api.listClaimAnnotations(NS, CSPI)).to.deep.equal({
        [DEVICE]: { "example.com/note": "kept" },
      });
    });

    it("reads BlockDevices", async () => {
      expect((await call("GET", crd("blockdevices", NS, DEVICE))).status).to.equal(200);
    });

    const refused: [string, string, string, unknown?, string?][] = [
      ["read Secrets", "GET", `/api/v1/namespaces/${NS}/secrets/rbac-secret`],
      ["list Secrets", "GET", `/api/v1/namespaces/${NS}/secrets`],
      ["read ConfigMaps", "GET", `/api/v1/namespaces/${NS}/configmaps/rbac-config`],
      ["list CSPIs of another namespace", "GET", crd("cstorpoolinstances", OTHER_NS)],
      [
        "patch a CSPI of another namespace",
        "PATCH",
        crd("cstorpoolinstances", OTHER_NS, CSPI),
        { metadata: { finalizers: [FINALIZER.poolProtection] } },
      ],
      ["list CSPIs of all namespaces", "GET", `/apis/${API_VERSION}/cstorpoolinstances`],
      ["delete a CSPC", "DELETE", crd("cstorpoolclusters", NS, "rbac")],
      ["patch a CSPC", "PATCH", crd("cstorpoolclusters", NS, "rbac"), { metadata: { labels: { x: "y" } } }],
      [
        "write CSPC status",
        "PATCH",
        crd("cstorpoolclusters", NS, "rbac/status"),
        { status: { desiredInstances: 0 } },
      ],
      ["delete a CSPI", "DELETE", crd("cstorpoolinstances", NS, CSPI)],
      ["create a CSPI", "POST", crd("cstorpoolinstances", NS), cspi(NS), "application/json"],
      ["delete a claim", "DELETE", crd("blockdeviceclaims", NS, CLAIM)],
      ["patch a BlockDevice", "PATCH", crd("blockdevices", NS, DEVICE), { metadata: { labels: { x: "y" } } }],
      ["list Nodes", "GET", "/api/v1/nodes"],
      [
        "create Pods",
        "POST",
        `/api/v1/namespaces/${NS}/pods`,
        {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "p" },
          spec: { containers: [{ name: "c", image: "x" }] },
        },
        "application/json",
      ],
      [
        "replace CSPI status wholesale",
        "PUT",
        crd("cstorpoolinstances", NS, `${CSPI}/status`),
        cspi(NS),
        "application/json",
      ],
      [
        "create events.k8s.io Events",
        "POST",
        `/apis/events.k8s.io/v1/namespaces/${NS}/events`,
        { apiVersion: "events.k8s.io/v1", kind: "Event", metadata: { name: "e" } },
        "application/json",
      ],
      [
        "change the DaemonSet",
        "PATCH",
        `/apis/apps/v1/namespaces/${NS}/daemonsets/cstor-pool-node`,
        { spec: { template: { spec: { hostNetwork: true } } } },
      ],
    ];
    for (const [what, method, path, body, type] of refused) {
      it(`is refused: ${what}`, async () => {
        const response = await call(method, path, body, type);
        expect(response.status, JSON.stringify(response.body)).to.equal(403);
        expect(response.body.reason).to.equal("Forbidden");
      });
    }

    const limited: [string, string, unknown][] = [
      ["change a CSPI's spec", crd("cstorpoolinstances", NS, CSPI), { spec: { hostName: "node-2" } }],
      [
        "change a CSPI's labels",
        crd("cstorpoolinstances", NS, CSPI),
        { metadata: { labels: { [LABEL.hostname]: "node-2" } } },
      ],
      [
        "change a claim's device",
        crd("blockdeviceclaims", NS, CLAIM),
        { spec: { blockDeviceName: "someone-elses" } },
      ],
      [
        "add an annotation to a claim",
        crd("blockdeviceclaims", NS, CLAIM),
        { metadata: { annotations: { [ANNOTATION.bdPredecessor]: "x" } } },
      ],
      [
        "remove another annotation from a claim",
        crd("blockdeviceclaims", NS, CLAIM),
        { metadata: { annotations: { "example.com/note": null } } },
      ],
    ];
    for (const [what, path, body] of limited) {
      it(`is refused by the node policy, with a message saying what it may change: ${what}`, async () => {
        const before = (await cluster.request(cluster.admin, "GET", path)).body;
        const response = await call("PATCH", path, body);
        expect(response.status, JSON.stringify(response.body)).to.equal(403);
        expect(response.body.message).to.match(
          /ValidatingAdmissionPolicy 'cstor-pool-node-limits'.*the node daemon \(system:serviceaccount:openebs:cstor-pool-node\) may (change only|only remove)/,
        );
        const after = (await cluster.request(cluster.admin, "GET", path)).body;
        expect(after.metadata.resourceVersion, "nothing changed").to.equal(before.metadata.resourceVersion);
      });
    }

    it("leaves everyone else's writes alone: the admin still edits a CSPI spec", async () => {
      const response = await cluster.request(
        cluster.admin,
        "PATCH",
        crd("cstorpoolinstances", NS, CSPI),
        { metadata: { labels: { extra: "yes" } } },
        "application/merge-patch+json",
      );
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
    });
  });

  describe("the volume target (ServiceAccount cstor-volume-target)", () => {
    let target: Identity;
    const call = (method: string, path: string, body?: unknown, type = "application/merge-patch+json") =>
      cluster.request(target, method, path, body, type);

    before(async () => {
      target = await cluster.serviceAccount(NS, "cstor-volume-target");
      await untilEnforced(call, crd("cstorvolumereplicas", NS, REPLICA), { spec: { capacity: "2Gi" } });
      await untilEnforced(call, crd("cstorvolumesnapshots", NS, SNAPSHOT), { spec: { volume: "probe" } });
    });

    it("does its whole job: reads and watches its CStorVolume and the replicas, writes status.target, marks a replica caught up, lists the pool pods, records Events", async () => {
      for (const path of [
        crd("cstorvolumes", NS, VOLUME),
        crd("cstorvolumes", NS),
        `${crd("cstorvolumes", NS)}?watch=1&timeoutSeconds=1`,
        crd("cstorvolumereplicas", NS, REPLICA),
        `${crd("cstorvolumereplicas", NS)}?labelSelector=${encodeURIComponent(`${LABEL.replicaVolume}=${VOLUME}`)}`,
        `${crd("cstorvolumereplicas", NS)}?watch=1&timeoutSeconds=1`,
        `/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(`${LABEL.app}=cstor-pool`)}`,
      ]) {
        const response = await call("GET", path);
        expect(response.status, `${path}: ${JSON.stringify(response.body)}`).to.equal(200);
      }

      const targetStatus = {
        state: "Serving",
        node: "node-1",
        replicas: [{ replicaId: "0123456789abcdef", pool: CSPI, state: "InSync" }],
      };
      const written = await call("PATCH", crd("cstorvolumes", NS, `${VOLUME}/status`), {
        status: { target: targetStatus },
      });
      expect(written.status, JSON.stringify(written.body)).to.equal(200);
      expect(written.body.status.target).to.deep.equal(targetStatus);

      const marked = await call("PATCH", crd("cstorvolumereplicas", NS, REPLICA), {
        metadata: { annotations: { [ANNOTATION.replicaCaughtUp]: "true" } },
      });
      expect(marked.status, JSON.stringify(marked.body)).to.equal(200);
      expect(marked.body.metadata.annotations).to.deep.equal({
        [ANNOTATION.rebuildingSince]: "2026-11-23T12:00:00Z",
        [ANNOTATION.replicaCaughtUp]: "true",
      });

      const writer = kubeEventWriter(cluster.kubeConfig(target));
      const cv = { kind: KIND.cv, metadata: { name: VOLUME, namespace: NS } };
      const name = await writer.createEvent(
        cv,
        { type: "Warning", reason: "ReplicaOffline", message: "a leg failed" },
        { component: "cstor-volume-target", host: "node-1" },
        new Date(),
      );
      await writer.repeatEvent(NS, name, { count: 2, message: "a leg failed", now: new Date() });
    });

    it("takes part in a snapshot through the agent's own client (volume-target/kube.ts): lists the volume's snapshots, writes their status, asks a replica and clears the ask, removes its finalizer from a deleted one", async () => {
      const kube = kubeTarget(cluster.kubeConfig(target), NS, VOLUME);
      const name = "rbac-snap-taken";
      await cluster.kubectl(["create", "-f", "-"], { input: JSON.stringify(snapshotObject(NS, name)) });
      const snapshot = (await kube.snapshots()).find((s) => s.metadata.name === name)!;
      expect(snapshot.spec.volume).to.equal(VOLUME);
      const ready = {
        phase: "ReadyToUse" as const,
        restoreSize: "1Gi",
        replicas: [REPLICA],
        holdMilliseconds: 40,
      };
      const written = await kube.writeSnapshotStatus(snapshot, ready);
      expect(written.status).to.deep.equal(ready);

      const replica = (await kube.replicas()).find((r) => r.metadata.name === REPLICA)!;
      const asked = await kube.annotateReplica(replica, {
        [ANNOTATION.snapshotNow]: name,
        [ANNOTATION.replicaSnapshots]: name,
      });
      expect(asked.metadata.annotations).to.deep.include({
        [ANNOTATION.snapshotNow]: name,
        [ANNOTATION.replicaSnapshots]: name,
      });
      const stale = await kube.annotateReplica(replica, { [ANNOTATION.snapshotNow]: null }).then(
        () => undefined,
        (error: { code?: number }) => error.code,
      );
      expect(stale, "a patch planned from an older read is refused").to.equal(409);
      const cleared = await kube.annotateReplica(asked, {
        [ANNOTATION.snapshotNow]: null,
        [ANNOTATION.replicaSnapshots]: "",
      });
      expect(cleared.metadata.annotations?.[ANNOTATION.snapshotNow]).to.equal(undefined);
      expect(cleared.metadata.annotations?.[ANNOTATION.replicaSnapshots]).to.equal("");

      await cluster.kubectl(["delete", "cvsnap", name, "-n", NS, "--wait=false"]);
      const deleted = (await kube.snapshots()).find((s) => s.metadata.name === name)!;
      expect(deleted.metadata.deletionTimestamp, "its finalizer holds it").to.be.a("string");
      await kube.removeSnapshotFinalizer(deleted);
      expect((await kube.snapshots()).map((s) => s.metadata.name)).to.not.include(name);
    });

    const refused: [string, string, string, unknown?, string?][] = [
      ["read Secrets", "GET", `/api/v1/namespaces/${NS}/secrets/rbac-secret`],
      ["list Secrets", "GET", `/api/v1/namespaces/${NS}/secrets`],
      ["read a Pod by name", "GET", `/api/v1/namespaces/${NS}/pods/any`],
      ["list Nodes", "GET", "/api/v1/nodes"],
      ["list CStorVolumes of another namespace", "GET", crd("cstorvolumes", OTHER_NS)],
      ["list CStorVolumeReplicas of all namespaces", "GET", `/apis/${API_VERSION}/cstorvolumereplicas`],
      [
        "write CStorVolume status in another namespace",
        "PATCH",
        crd("cstorvolumes", OTHER_NS, `${VOLUME}/status`),
        { status: { target: { state: "Serving" } } },
      ],
      [
        "patch a CStorVolumeReplica of another namespace",
        "PATCH",
        crd("cstorvolumereplicas", OTHER_NS, REPLICA),
        { metadata: { annotations: { [ANNOTATION.replicaCaughtUp]: "true" } } },
      ],
      [
        "change a CStorVolume's spec",
        "PATCH",
        crd("cstorvolumes", NS, VOLUME),
        { spec: { replicationFactor: 3 } },
      ],
      [
        "write CStorVolumeReplica status",
        "PATCH",
        crd("cstorvolumereplicas", NS, `${REPLICA}/status`),
        { status: { phase: "Healthy" } },
      ],
      ["delete a CStorVolumeReplica", "DELETE", crd("cstorvolumereplicas", NS, REPLICA)],
      [
        "create a CStorVolumeReplica",
        "POST",
        crd("cstorvolumereplicas", NS),
        volumeObjects(NS)[1],
        "application/json",
      ],
      ["delete a CStorVolume", "DELETE", crd("cstorvolumes", NS, VOLUME)],
      ["read CSPIs", "GET", crd("cstorpoolinstances", NS)],
      [
        "create a CStorVolumeSnapshot",
        "POST",
        crd("cstorvolumesnapshots", NS),
        snapshotObject(NS, "rbac-made"),
        "application/json",
      ],
      ["delete a CStorVolumeSnapshot", "DELETE", crd("cstorvolumesnapshots", NS, SNAPSHOT)],
      ["list CStorVolumeSnapshots of another namespace", "GET", crd("cstorvolumesnapshots", OTHER_NS)],
      [
        "write a CStorVolumeSnapshot's status in another namespace",
        "PATCH",
        crd("cstorvolumesnapshots", OTHER_NS, `${SNAPSHOT}/status`),
        { status: { phase: "ReadyToUse" } },
      ],
      ["read CStorVolumeConfigs", "GET", crd("cstorvolumeconfigs", NS)],
      [
        "change a Deployment",
        "PATCH",
        `/apis/apps/v1/namespaces/${NS}/deployments/cstor-pool-hooks`,
        { spec: { replicas: 3 } },
      ],
    ];
    for (const [what, method, path, body, type] of refused) {
      it(`is refused: ${what}`, async () => {
        const response = await call(method, path, body, type);
        expect(response.status, JSON.stringify(response.body)).to.equal(403);
        expect(response.body.reason).to.equal("Forbidden");
      });
    }

    const limited: [string, unknown][] = [
      ["change a replica's size", { spec: { capacity: "2Gi" } }],
      [
        "move a replica to another pool (its pool label)",
        { metadata: { labels: { [LABEL.replicaPool]: "other-pool" } } },
      ],
      ["release a replica (its finalizer)", { metadata: { finalizers: null } }],
      ["remove another annotation", { metadata: { annotations: { [ANNOTATION.rebuildingSince]: null } } }],
      ["add another annotation", { metadata: { annotations: { [ANNOTATION.replicaLost]: "confirm" } } }],
    ];
    for (const [what, body] of limited) {
      it(`is refused by the target policy, with a message saying what it may change: ${what}`, async () => {
        const path = crd("cstorvolumereplicas", NS, REPLICA);
        const before = (await cluster.request(cluster.admin, "GET", path)).body;
        const response = await call("PATCH", path, body);
        expect(response.status, JSON.stringify(response.body)).to.equal(403);
        expect(response.body.message).to.match(
          /ValidatingAdmissionPolicy 'cstor-volume-target-limits'.*the volume target \(system:serviceaccount:openebs:cstor-volume-target\) may change only the openebs.io\/replica-caught-up, cstor.openebs.io\/snapshot-now and cstor.openebs.io\/snapshots annotations/,
        );
        const after = (await cluster.request(cluster.admin, "GET", path)).body;
        expect(after.metadata.resourceVersion, "nothing changed").to.equal(before.metadata.resourceVersion);
      });
    }

    const snapshotLimited: [string, unknown][] = [
      ["change a snapshot's volume", { spec: { volume: "other-vol" } }],
      ["label a snapshot", { metadata: { labels: { extra: "yes" } } }],
      ["annotate a snapshot", { metadata: { annotations: { "example.com/note": "x" } } }],
      [
        "add a finalizer to a snapshot",
        { metadata: { finalizers: [FINALIZER.replicaSnapshots, "example.com/keep"] } },
      ],
    ];
    for (const [what, body] of snapshotLimited) {
      it(`is refused by the snapshot policy, with a message saying what it may change: ${what}`, async () => {
        const response = await call("PATCH", crd("cstorvolumesnapshots", NS, SNAPSHOT), body);
        expect(response.status, JSON.stringify(response.body)).to.equal(403);
        expect(response.body.message).to.match(
          /ValidatingAdmissionPolicy 'cstor-volume-target-snapshot-limits'.*may only remove the finalizer cstor.openebs.io\/replica-snapshots of CStorVolumeSnapshot rbac-snap/,
        );
      });
    }

    it("leaves everyone else's replica writes alone: the admin still edits a replica's labels", async () => {
      const response = await cluster.request(
        cluster.admin,
        "PATCH",
        crd("cstorvolumereplicas", NS, REPLICA),
        { metadata: { labels: { extra: "yes" } } },
        "application/merge-patch+json",
      );
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
    });
  });

  describe("the hook server (ServiceAccount cstor-pool-hooks)", () => {
    let hooks: Identity;
    const readable = [
      crd("blockdevices"),
      crd("blockdeviceclaims"),
      crd("cstorpoolinstances"),
      "/api/v1/nodes",
    ];

    before(async () => {
      hooks = await cluster.serviceAccount(NS, "cstor-pool-hooks");
    });

    it("reads nothing in the default install (Metacontroller sends hooks everything they need)", async () => {
      for (const path of readable) {
        const response = await cluster.request(hooks, "GET", path);
        expect(response.status, path).to.equal(403);
      }
    });

    it("creates and counts up core Events on CSPCs in its namespace, as the hook server's writer does", async () => {
      const writer = kubeEventWriter(cluster.kubeConfig(hooks));
      const cspc = { kind: KIND.cspc, metadata: { name: "rbac", namespace: NS } };
      const name = await writer.createEvent(
        cspc,
        { type: "Warning", reason: "ChangesRejected", message: "refused: put it back" },
        { component: "cstor-pool-hooks", host: "hooks-0" },
        new Date(),
      );
      await writer.repeatEvent(NS, name, { count: 2, message: "refused: put it back", now: new Date() });
      const recorded = await cluster.request(cluster.admin, "GET", `/api/v1/namespaces/${NS}/events/${name}`);
      expect(recorded.body).to.deep.include({ reason: "ChangesRejected", count: 2 });
      expect(recorded.body.involvedObject).to.deep.include({ kind: KIND.cspc, name: "rbac" });
    });

    const refusedByDefault: [string, string, string, unknown?][] = [
      ["read Events", "GET", `/api/v1/namespaces/${NS}/events`],
      ["delete an Event", "DELETE", `/api/v1/namespaces/${NS}/events/any`],
      [
        "create Events in another namespace",
        "POST",
        `/api/v1/namespaces/${OTHER_NS}/events`,
        { metadata: { name: "e" }, involvedObject: { kind: KIND.cspc, name: "rbac", namespace: OTHER_NS } },
      ],
      [
        "create events.k8s.io Events",
        "POST",
        `/apis/events.k8s.io/v1/namespaces/${NS}/events`,
        { apiVersion: "events.k8s.io/v1", kind: "Event", metadata: { name: "e" } },
      ],
      ["read Secrets", "GET", `/api/v1/namespaces/${NS}/secrets`],
    ];
    for (const [what, method, path, body] of refusedByDefault) {
      it(`is refused in the default install: ${what}`, async () => {
        const response = await cluster.request(hooks, method, path, body, "application/json");
        expect(response.status, JSON.stringify(response.body)).to.equal(403);
      });
    }

    describe("with the admission component's RBAC", () => {
      before(async () => {
        await cluster.kubectl([
          "apply",
          "--server-side",
          "-f",
          repoPath("metacontroller/components/admission/hook-server-rbac.yaml"),
        ]);
      });

      it("gets and lists what the admission lookups need: BlockDevices, claims, CSPIs, CStorVolumeReplicas, Nodes", async () => {
        for (const path of [
          ...readable,
          crd("blockdevices", NS, DEVICE),
          crd("cstorpoolinstances", NS, CSPI),
          crd("blockdeviceclaims", NS, CLAIM),
          crd("cstorvolumereplicas", NS),
        ]) {
          const response = await cluster.request(hooks, "GET", path);
          expect(response.status, `${path}: ${JSON.stringify(response.body)}`).to.equal(200);
        }
      });

      const refused: [string, string, string, unknown?][] = [
        ["read Secrets", "GET", `/api/v1/namespaces/${NS}/secrets`],
        ["watch CSPIs", "GET", `${crd("cstorpoolinstances")}?watch=1&timeoutSeconds=1`],
        ["read CSPIs of another namespace", "GET", crd("cstorpoolinstances", OTHER_NS)],
        ["patch a CSPI", "PATCH", crd("cstorpoolinstances", NS, CSPI), { metadata: { labels: { x: "y" } } }],
        ["patch a claim", "PATCH", crd("blockdeviceclaims", NS, CLAIM), { metadata: { labels: { x: "y" } } }],
        ["delete a CSPC", "DELETE", crd("cstorpoolclusters", NS, "rbac")],
        ["patch a Node", "PATCH", "/api/v1/nodes/node-1", { metadata: { labels: { x: "y" } } }],
      ];
      for (const [what, method, path, body] of refused) {
        it(`is refused: ${what}`, async () => {
          const response = await cluster.request(hooks, method, path, body, "application/merge-patch+json");
          expect(response.status, JSON.stringify(response.body)).to.equal(403);
        });
      }
    });
  });
});
