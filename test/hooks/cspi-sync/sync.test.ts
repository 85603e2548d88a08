import { expect } from "chai";
import { DEFAULTS } from "../../../api/constants.js";
import type { CSPI, DecoratorSyncResponse, KubeObject } from "../../../api/types.js";
import { DEFAULT_HOOK_CONFIG, type HookConfig } from "../../../lib/hook-config.js";
import { handleCspiSync } from "../../../hooks/cspi-sync/sync.js";
import { canonicalize } from "../../../lib/canonical.js";
import { BadRequestError } from "../../../lib/errors.js";
import { goldenCases, type GoldenCase } from "../../support/golden.js";
import { expectContained } from "../../support/contained.js";

interface Request {
  object: CSPI & KubeObject;
  attachments: Record<string, Record<string, KubeObject>>;
  finalizing?: boolean;
}

const cases = goldenCases("cspi-sync");
const golden = (name: string): GoldenCase => cases.find((c) => c.name === name)!;
const requestOf = (name: string): Request => structuredClone(golden(name).read("request.yaml")) as Request;
const at = (iso: string) => () => new Date(iso);
const NOW = "2026-11-21T10:00:00Z";

function sync(request: Request, now = NOW, config: HookConfig = DEFAULT_HOOK_CONFIG): DecoratorSyncResponse {
  return handleCspiSync(request, at(now), config);
}
const deploymentOf = (response: DecoratorSyncResponse) =>
  response.attachments[0] as KubeObject & { spec: any };
const conditionOf = (response: DecoratorSyncResponse, type: string) =>
  (response.status as CSPI["status"])!.conditions!.find((c) => c.type === type)!;

describe("cspi-sync", () => {
  it("carries a fresh node daemon status through untouched and asks for the Deployment as observed (a fixed point)", () => {
    const request = requestOf("node-daemon-fresh-carried-through");
    const response = sync(request);
    expect(canonicalize(response.status)).to.deep.equal(canonicalize(request.object.status));
    const observed = Object.values(request.attachments["Deployment.apps/v1"])[0];
    expectContained(canonicalize(deploymentOf(response)), observed);
  });

  it("gives the same status when its own answer is fed back, for every golden case: no write loop with the node daemon", () => {
    for (const c of cases) {
      const request = structuredClone(c.read("request.yaml")) as Request;
      const first = handleCspiSync(request, () => c.now, DEFAULT_HOOK_CONFIG);
      request.object.status = structuredClone(first.status) as CSPI["status"];
      const second = handleCspiSync(request, () => c.now, DEFAULT_HOOK_CONFIG);
      const withoutResync = (r: DecoratorSyncResponse) => canonicalize({ ...r, resyncAfterSeconds: 0 });
      expect(withoutResync(second), c.name).to.deep.equal(withoutResync(first));
      expect(second.resyncAfterSeconds, `${c.name}: its status seen, no sooner resync`).to.be.at.least(
        first.resyncAfterSeconds!,
      );
    }
  });

  it("writes a stale CSPI once: later resyncs while the heartbeat stays stale change nothing", () => {
    const request = requestOf("node-daemon-stale");
    const first = sync(request);
    request.object.status = first.status as CSPI["status"];
    const hourLater = sync(request, "2026-11-21T11:00:00Z");
    expect(canonicalize(hourLater.status)).to.deep.equal(canonicalize(first.status));
  });

  it("answers only the v2 decorator fields, with one pool Deployment named after the CSPI", () => {
    const response = sync(requestOf("seed-1-stripe"));
    expect(Object.keys(response).sort()).to.deep.equal([
      "annotations",
      "attachments",
      "labels",
      "resyncAfterSeconds",
      "status",
    ]);
    expect(response.attachments).to.have.length(1);
    expect(deploymentOf(response).metadata).to.include({
      name: "cstor-pool-stripe-57f22c",
      namespace: "openebs",
    });
  });

  describe("the pool Deployment", () => {
    it("selects its pod by the CSPI's own label only, so two pools' Deployments never share pods", () => {
      const one = deploymentOf(sync(requestOf("seed-4-mirror-pool-1")));
      const two = deploymentOf(sync(requestOf("seed-4-mirror-pool-2")));
      expect(one.spec.selector).to.deep.equal({
        matchLabels: { "openebs.io/cstor-pool-instance": "cstor-pool-mirror-1a264d" },
      });
      expect(two.spec.selector).to.deep.equal({
        matchLabels: { "openebs.io/cstor-pool-instance": "cstor-pool-mirror-8f19f5" },
      });
      for (const d of [one, two]) {
        expect(d.spec.template.metadata.labels).to.include(d.spec.selector.matchLabels);
        expect(d.spec.template.metadata.labels).to.include({
          "openebs.io/cstor-pool-cluster": "cstor-pool-mirror",
        });
        expect(d.spec).to.include({ replicas: 1 });
        expect(d.spec.strategy).to.deep.equal({ type: "Recreate" });
      }
    });

    it("pins the pod to the CSPI's node on top of the CSPI nodeSelector", () => {
      const request = requestOf("seed-1-stripe");
      request.object.spec.nodeSelector = {
        "topology.kubernetes.io/zone": "z1",
        "kubernetes.io/hostname": "stale-name",
      };
      const spec = deploymentOf(sync(request)).spec.template.spec;
      expect(spec.nodeSelector).to.deep.equal({
        "kubernetes.io/hostname": "gke-cstor-it-default-pool-1",
        "topology.kubernetes.io/zone": "z1",
      });
    });

    it("rolls the pod when the node, resources or tolerations change, and only the pod template changes", () => {
      const base = requestOf("seed-4-mirror-pool-1");
      const before = deploymentOf(sync(base));
      const edits: Record<string, (cspi: CSPI) => void> = {
        node: (c) => {
          c.spec.hostName = "gke-cstor-it-default-pool-3";
          c.spec.nodeSelector = { "kubernetes.io/hostname": "gke-cstor-it-default-pool-3" };
        },
        resources: (c) => (c.spec.poolConfig.resources = { requests: { memory: "2Gi" } }),
        auxResources: (c) => (c.spec.poolConfig.auxResources = { limits: { cpu: "200m" } }),
        tolerations: (c) =>
          (c.spec.poolConfig.tolerations = [{ key: "storage", operator: "Exists", effect: "NoSchedule" }]),
        priorityClassName: (c) => (c.spec.poolConfig.priorityClassName = "system-node-critical"),
      };
      for (const [what, edit] of Object.entries(edits)) {
        const request = requestOf("seed-4-mirror-pool-1");
        edit(request.object);
        const after = deploymentOf(sync(request));
        expect(canonicalize(after.spec.template), what).to.not.deep.equal(canonicalize(before.spec.template));
        const { template: _a, ...restAfter } = after.spec;
        const { template: _b, ...restBefore } = before.spec;
        expect(canonicalize(restAfter), `${what}: selector and strategy stay`).to.deep.equal(
          canonicalize(restBefore),
        );
      }
    });

    it("does not touch the pod for status, raid group or pool tunable changes the node daemon applies itself", () => {
      const before = deploymentOf(sync(requestOf("seed-4-mirror-pool-1")));
      const request = requestOf("node-daemon-stale");
      request.object.spec.poolConfig.compression = "off";
      request.object.spec.raidGroups = request.object.spec.raidGroups.slice(0, 1);
      expect(canonicalize(deploymentOf(sync(request)))).to.deep.equal(canonicalize(before));
    });

    it("mounts a device-set pool's PVCs in the agent only: in PVC order whatever the raid groups' order, and a new raid group's PVCs join the pod template", () => {
      const request = requestOf("device-set-pool-mounts-pvcs");
      const claimsOf = (response: DecoratorSyncResponse) => {
        const spec = deploymentOf(response).spec.template.spec;
        const claims = spec.volumes.flatMap((v: { persistentVolumeClaim?: { claimName: string } }) =>
          v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : [],
        );
        const paths = spec.containers.map((c: { volumeDevices?: { devicePath: string }[] }) =>
          (c.volumeDevices ?? []).map((d) => d.devicePath),
        );
        return { claims, paths };
      };
      const names = [
        "cstor-pool-mirror-data-0",
        "cstor-pool-mirror-data-1",
        "cstor-pool-mirror-data-2",
        "cstor-pool-mirror-data-3",
      ];
      const before = sync(request);
      expect(claimsOf(before)).to.deep.equal({
        claims: names,
        paths: [names.map((n) => `/cstor-sets/${n}`), []],
      });

      request.object.spec.raidGroups.reverse();
      expect(canonicalize(deploymentOf(sync(request)))).to.deep.equal(canonicalize(deploymentOf(before)));

      request.object.spec.raidGroups.push({
        type: "mirror",
        blockDevices: [
          { blockDeviceName: "cstor-pool-mirror-data-4" },
          { blockDeviceName: "cstor-pool-mirror-data-5" },
        ],
      });
      const grown = [...names, "cstor-pool-mirror-data-4", "cstor-pool-mirror-data-5"];
      expect(claimsOf(sync(request)).claims).to.deep.equal(grown);
    });

    it("takes the image, pull secrets and the host base directory from the configuration", () => {
      const config: HookConfig = {
        ...DEFAULT_HOOK_CONFIG,
        poolPod: {
          poolImage: "registry.local/pool-agent:1",
          imagePullSecrets: ["regcred"],
          baseDir: "/data/openebs",
        },
      };
      const spec = deploymentOf(sync(requestOf("seed-1-stripe"), NOW, config)).spec.template.spec;
      expect(
        spec.containers.map((c: { image: string }) => c.image),
        "the agent and tgtd, one image",
      ).to.deep.equal(["registry.local/pool-agent:1", "registry.local/pool-agent:1"]);
      expect(spec.imagePullSecrets).to.deep.equal([{ name: "regcred" }]);
      expect(spec.volumes.find((v: { name: string }) => v.name === "storagepath").hostPath).to.deep.equal({
        path: "/data/openebs/cstor-pool/cstor-pool-stripe-57f22c",
        type: "DirectoryOrCreate",
      });
    });

    it("runs the pool agent, ready from its /readyz, on the host's ZFS; tgtd beside it on the iSCSI port", () => {
      const spec = deploymentOf(sync(requestOf("seed-1-stripe"))).spec.template.spec;
      const [agent, tgtd] = spec.containers;
      expect(agent.readinessProbe.httpGet).to.deep.equal({ path: "/readyz", port: 9500, scheme: "HTTP" });
      expect(agent.livenessProbe.httpGet).to.deep.equal({ path: "/healthz", port: 9500, scheme: "HTTP" });
      expect(agent.command, "the image's entrypoint is the agent").to.equal(undefined);
      expect(agent.env).to.deep.equal([
        { name: "OPENEBS_IO_CSPI_NAME", value: "cstor-pool-stripe-57f22c" },
        { name: "OPENEBS_IO_ZPOOL_NAME", value: "cstor-cstor-pool-stripe-57f22c" },
        { name: "ZFS_COMMAND_PREFIX", value: '["nsenter","-t","1","-m","--"]' },
        { name: "PORT", value: "9500" },
        // Not optional: a pool pod without the Secret does not start, so nothing is served without CHAP.
        {
          name: "CSTOR_REPLICA_CHAP_KEY",
          valueFrom: { secretKeyRef: { key: "key", name: "cstor-replica-chap-key" } },
        },
      ]);
      expect(
        spec.hostPID,
        "nsenter -t 1 reaches the host's mount namespace only with the host's PIDs",
      ).to.equal(true);
      expect(tgtd.command).to.deep.equal(["tgtd", "-f", "--iscsi", "portal=0.0.0.0:3260"]);
      expect(spec.containers.map((c: any) => c.name)).to.deep.equal(["cstor-pool", "tgtd"]);
      expect(JSON.stringify(spec), "no upstream pool data plane or exporter").to.not.match(
        /maya-exporter|m-exporter|zrepl|cstor-pool:3/,
      );
    });
  });

  describe("PodAvailable", () => {
    it("is True once the Deployment has an available, updated replica", () => {
      const response = sync(requestOf("node-daemon-fresh-carried-through"));
      expect(conditionOf(response, "PodAvailable")).to.include({
        status: "True",
        reason: "PoolPodAvailable",
      });
    });

    it("is False with MissingPoolDeployment when the Deployment is gone, and the Deployment is returned again", () => {
      const response = sync(requestOf("deployment-missing-recreated"));
      expect(conditionOf(response, "PodAvailable")).to.include({
        status: "False",
        reason: "MissingPoolDeployment",
        lastTransitionTime: NOW,
      });
      expect(deploymentOf(response).metadata.name).to.equal("cstor-pool-mirror-1a264d");
    });

    it("is False with PoolPodNotReady and a message naming the Deployment when no replica is available", () => {
      const condition = conditionOf(sync(requestOf("pod-not-ready")), "PodAvailable");
      expect(condition).to.include({ status: "False", reason: "PoolPodNotReady" });
      expect(condition.message).to.contain("openebs/cstor-pool-mirror-1a264d").and.contain("0 of 1 ready");
    });
  });

  describe("resync while the pool Deployment or the status is not applied (a decorator sync given up on a conflict is not retried)", () => {
    const observedOf = (request: Request) =>
      Object.values(request.attachments["Deployment.apps/v1"])[0] as KubeObject & { spec: any };
    /** A heartbeat a second old: the heartbeat alone would ask for the full resync period. */
    const justReported = () => {
      const request = requestOf("node-daemon-fresh-carried-through");
      request.object.status!.lastUpdateTime = "2026-11-21T09:59:59Z";
      return request;
    };

    it("asks again within seconds while the Deployment is missing", () => {
      expect(sync(requestOf("deployment-missing-recreated")).resyncAfterSeconds).to.equal(
        DEFAULTS.confirmResyncSeconds,
      );
    });

    it("asks again within seconds while the Deployment differs from the answer, or is being deleted", () => {
      const changed = justReported();
      observedOf(changed).spec.strategy = { type: "RollingUpdate" };
      expect(sync(changed).resyncAfterSeconds).to.equal(DEFAULTS.confirmResyncSeconds);
      const deleting = justReported();
      observedOf(deleting).metadata.deletionTimestamp = "2026-11-21T09:59:00Z";
      expect(sync(deleting).resyncAfterSeconds).to.equal(DEFAULTS.confirmResyncSeconds);
    });

    it("asks only for the heartbeat's resync while a rollout waits for its permit (the answer keeps the observed template), within seconds once permitted", () => {
      const waiting = justReported();
      observedOf(waiting).spec.template.spec.containers[0].image = "openebs/cstor-pool:3.5.0";
      const answer = sync(waiting);
      expect(deploymentOf(answer).spec.template.spec.containers[0].image).to.equal(
        "openebs/cstor-pool:3.5.0",
      );
      expect(answer.resyncAfterSeconds, "its pendingRollout not yet seen").to.equal(
        DEFAULTS.confirmResyncSeconds,
      );
      waiting.object.status = structuredClone(answer.status) as CSPI["status"];
      expect(sync(waiting).resyncAfterSeconds, "its status seen").to.equal(DEFAULT_HOOK_CONFIG.resyncSeconds);
      const hash = (answer.status as CSPI["status"])!.pendingRollout!;
      waiting.object.metadata.annotations = { "openebs.io/rollout-permit": hash };
      const permitted = sync(waiting);
      expect(deploymentOf(permitted).spec.template.spec.containers[0].image).to.equal(
        DEFAULT_HOOK_CONFIG.poolPod.poolImage,
      );
      expect(permitted.resyncAfterSeconds).to.equal(DEFAULTS.confirmResyncSeconds);
    });

    it("asks only for the heartbeat's resync once the Deployment holds the answer, whatever the server added", () => {
      const request = justReported();
      observedOf(request).metadata.annotations = {
        ...observedOf(request).metadata.annotations,
        "deployment.kubernetes.io/revision": "3",
      };
      expect(sync(request).resyncAfterSeconds).to.equal(DEFAULT_HOOK_CONFIG.resyncSeconds);
    });

    it("asks again within seconds while the status it answers is not the one it was sent (a status write given up on a conflict), the heartbeat's resync once it is", () => {
      const request = requestOf("pod-not-ready");
      const answer = sync(request);
      expect(conditionOf(answer, "PodAvailable")).to.include({ reason: "PoolPodNotReady" });
      expect(answer.resyncAfterSeconds, "PodAvailable changed").to.equal(DEFAULTS.confirmResyncSeconds);
      request.object.status = structuredClone(answer.status) as CSPI["status"];
      expect(sync(request).resyncAfterSeconds, "written and seen").to.equal(
        DEFAULT_HOOK_CONFIG.resyncSeconds,
      );
    });

    it("a pool moved to another node rolls its available pod off the old node without a permit, whether or not the old node still holds the pool; a change on its own node waits for one", () => {
      const reasonOf = (request: Request) => conditionOf(sync(request), "RolloutPending").reason;
      const moved = requestOf("rollout-node-changed-moves");
      expect(moved.object.status!.importedOn).to.not.equal(moved.object.spec.hostName);
      expect(reasonOf(moved), "the old pod stops so that the pool can be exported").to.equal("Permitted");
      for (const importedOn of ["", moved.object.spec.hostName]) {
        const gone = requestOf("rollout-node-changed-moves");
        gone.object.status!.importedOn = importedOn;
        expect(reasonOf(gone), `imported on "${importedOn}": the old pod serves nothing`).to.equal(
          "Permitted",
        );
      }
      expect(reasonOf(requestOf("rollout-tolerations-changed-waits")), "same node").to.equal("Waiting");
    });

    it("never asks later than a sooner heartbeat bound", () => {
      const config = { ...DEFAULT_HOOK_CONFIG, resyncSeconds: 3 };
      expect(
        handleCspiSync(requestOf("deployment-missing-recreated"), at(NOW), config).resyncAfterSeconds,
      ).to.equal(3);
    });
  });

  describe("stale node daemon status", () => {
    const withHeartbeat = (lastUpdateTime: string) => {
      const request = requestOf("node-daemon-fresh-carried-through");
      request.object.status!.lastUpdateTime = lastUpdateTime;
      return request;
    };

    it("keeps the phase up to the bound and marks it Unknown one second after", () => {
      const atBound = sync(withHeartbeat("2026-11-21T09:55:00Z"));
      expect(atBound.status).to.include({ phase: "ONLINE" });
      expect(conditionOf(atBound, "NodeDaemonHeartbeat")).to.include({ status: "True" });
      const past = sync(withHeartbeat("2026-11-21T09:54:59Z"));
      expect(past.status).to.include({ phase: "Unknown" });
      expect(conditionOf(past, "NodeDaemonHeartbeat")).to.include({
        status: "False",
        reason: "HeartbeatStale",
      });
      expect(conditionOf(past, "NodeDaemonHeartbeat").message)
        .to.contain("2026-11-21T09:54:59Z")
        .and.contain("gke-cstor-it-default-pool-1");
    });

    it("asks to be called again when a fresh heartbeat would turn stale", () => {
      expect(sync(withHeartbeat("2026-11-21T09:55:30Z")).resyncAfterSeconds).to.equal(31);
      expect(sync(withHeartbeat("2026-11-21T09:59:59Z")).resyncAfterSeconds).to.equal(
        DEFAULT_HOOK_CONFIG.resyncSeconds,
      );
    });

    it("uses the configured bound", () => {
      const config = { ...DEFAULT_HOOK_CONFIG, staleStatusSeconds: 30 };
      expect(handleCspiSync(withHeartbeat("2026-11-21T09:59:00Z"), at(NOW), config).status).to.include({
        phase: "Unknown",
      });
      expect(handleCspiSync(withHeartbeat("2026-11-21T09:59:45Z"), at(NOW), config).status).to.include({
        phase: "ONLINE",
      });
    });

    it("leaves the phase alone while the node daemon has never reported", () => {
      const response = sync(requestOf("seed-1-stripe"), "2027-01-01T00:00:00Z");
      expect(response.status).to.not.have.property("phase");
      expect(conditionOf(response, "NodeDaemonHeartbeat")).to.include({
        status: "Unknown",
        reason: "NoHeartbeat",
      });
    });
  });

  it("answers as the finalize hook when Metacontroller calls it with finalizing: true", () => {
    const request = requestOf("node-daemon-fresh-carried-through");
    request.finalizing = true;
    request.object.metadata.deletionTimestamp = "2026-11-21T09:59:00Z";
    const response = sync(request);
    expect(response.attachments).to.deep.equal([]);
    expect(response.finalized).to.equal(false);
  });

  describe("bad input is refused with a message naming the object, the field and the fix", () => {
    const refuse = (edit: (cspi: CSPI) => void, pattern: RegExp) => {
      const request = requestOf("seed-1-stripe");
      edit(request.object);
      expect(() => sync(request)).to.throw(BadRequestError, pattern);
    };

    it("a CSPI without a hostName, or one that is no node's hostname label", () => {
      refuse((c) => delete (c.spec as Partial<CSPI["spec"]>).hostName, /spec\.hostName/);
      refuse(
        (c) => (c.spec.hostName = "node 1"),
        /CStorPoolInstance openebs\/cstor-pool-stripe-57f22c spec\.hostName "node 1" is not a node hostname label value: .*recreate the CSPI/,
      );
    });

    it("a resource value that is not a quantity", () => {
      refuse(
        (c) => (c.spec.poolConfig.resources = { limits: { memory: "lots" } }),
        /spec\.poolConfig\.resources\.limits\.memory "lots" is not a non-negative Kubernetes quantity .*fix it in the CStorPoolCluster/,
      );
    });

    it("a request above its limit, which the API server would reject", () => {
      refuse(
        (c) => (c.spec.poolConfig.auxResources = { requests: { memory: "2Gi" }, limits: { memory: "1Gi" } }),
        /spec\.poolConfig\.auxResources\.requests\.memory 2Gi is above its limit 1Gi/,
      );
    });

    it("a device-set CSPI whose devices are not PVC names", () => {
      refuse((c) => {
        c.metadata.labels = { ...c.metadata.labels, "openebs.io/on-device-sets": "true" };
        c.spec.raidGroups[0].blockDevices[0].blockDeviceName = "../sda";
      }, /CStorPoolInstance openebs\/cstor-pool-stripe-57f22c is labelled openebs.io\/on-device-sets=true but its raid groups name "\.\.\/sda", which is not a PVC name: .*recreate the CSPI/);
    });

    it("a CSPI name too long to be a label value", () => {
      refuse((c) => (c.metadata.name = "x".repeat(64)), /longer than 63 characters/);
    });

    it("a request for another kind", () => {
      const request = requestOf("seed-1-stripe") as unknown as { object: { kind: string } };
      request.object.kind = "CStorPoolCluster";
      expect(() => handleCspiSync(request, at(NOW), DEFAULT_HOOK_CONFIG)).to.throw(
        BadRequestError,
        /this hook serves CStorPoolInstance/,
      );
    });
  });
});
