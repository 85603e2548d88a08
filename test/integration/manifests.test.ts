// The shipped manifests against a real kube-apiserver: they apply server-side (strict field validation), the
// CRDs become Established, every reference between objects resolves, and the workloads are shaped as promised.
import { expect } from "chai";
import { parseAllDocuments } from "yaml";
import { CSI, LABEL } from "../../api/constants.js";
import { hookRoutes } from "../../hooks/routes.js";
import { DEFAULT_HOOK_CONFIG } from "../../lib/hook-config.js";
import { STALE_STATUS_SECONDS_ENV } from "../../lib/settings.js";
import { CHAP_KEY_ENV, CHAP_KEY_SECRET, CHAP_KEY_SECRET_KEY } from "../../lib/volume/chap.js";
import { TARGET_SERVICE_ACCOUNT, targetDeployment } from "../../lib/volume/children.js";
import { commandsFromEnv } from "../../zfs/host.js";
import {
  fixturePath,
  INSTALL_NAMESPACE,
  projectInstalled,
  repoPath,
  type KubeCluster,
} from "../../testkit/kube.js";
import { shippedDashboards } from "../support/monitoring.js";
import { newVolume } from "../support/new-volume.js";

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [field: string]: any;
}

const CLUSTER_SCOPED = new Set([
  "Namespace",
  "CustomResourceDefinition",
  "ClusterRole",
  "ClusterRoleBinding",
  "ValidatingWebhookConfiguration",
  "CSIDriver",
  "ValidatingAdmissionPolicy",
  "ValidatingAdmissionPolicyBinding",
  "CompositeController",
  "DecoratorController",
]);

async function render(cluster: KubeCluster, overlay: string): Promise<Manifest[]> {
  const { stdout } = await cluster.kubectl(["kustomize", repoPath(overlay)]);
  return parseAllDocuments(stdout).map((doc) => doc.toJS() as Manifest);
}

function find(objects: Manifest[], kind: string, name: string): Manifest {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found)
    throw new Error(
      `no ${kind} ${name} among ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(", ")}`,
    );
  return found;
}

/** A volume's target Deployment as cvc-sync makes it: no manifest holds one. */
function volumeTarget(): Manifest {
  const inventory = newVolume("pvc-1", INSTALL_NAMESPACE, {
    capacity: "1Gi",
    cstorPoolCluster: "cspc",
    replicaCount: 3,
  });
  return targetDeployment(inventory, DEFAULT_HOOK_CONFIG.volumeTarget) as Manifest;
}

async function getJson(cluster: KubeCluster, ...args: string[]): Promise<any> {
  return JSON.parse((await cluster.kubectl(["get", ...args, "-o", "json"])).stdout);
}

describe("integration: manifests on a real kube-apiserver", function () {
  this.timeout(20 * 60_000);
  let cluster: KubeCluster;

  before(async () => {
    cluster = await projectInstalled();
  });

  it("installs with `kubectl apply --server-side -k metacontroller/default`, and again without changes", async () => {
    const again = await cluster.kubectl(["apply", "--server-side", "-k", repoPath("metacontroller/default")]);
    expect(again.stdout).to.match(/daemonset\.apps\/cstor-pool-node serverside-applied/);
    const diff = await cluster.kubectl(["diff", "--server-side", "-k", repoPath("metacontroller/default")], {
      allowFailure: true,
    });
    expect(diff.exitCode, diff.stdout + diff.stderr).to.equal(0);
  });

  it("makes every CRD Established: CSPC, CSPI and CStorVolumeReplica (ours), BlockDevice and BlockDeviceClaim (NDM's shape)", async () => {
    for (const crd of [
      "cstorpoolclusters",
      "cstorpoolinstances",
      "cstorvolumereplicas",
      "blockdevices",
      "blockdeviceclaims",
    ]) {
      const object = await getJson(cluster, "crd", `${crd}.openebs.io`);
      const established = object.status.conditions.find((c: { type: string }) => c.type === "Established");
      expect(established?.status, crd).to.equal("True");
    }
    const { stdout } = await cluster.kubectl(["api-resources", "--api-group=openebs.io", "-o", "name"]);
    expect(stdout.split("\n")).to.include.members([
      "cstorpoolclusters.openebs.io",
      "cstorpoolinstances.openebs.io",
      "cstorvolumereplicas.openebs.io",
      "blockdevices.openebs.io",
      "blockdeviceclaims.openebs.io",
    ]);
    const shortNames = await cluster.kubectl(["get", "cspc,cspi", "-n", INSTALL_NAMESPACE]);
    expect(shortNames.exitCode).to.equal(0);
  });

  for (const overlay of ["metacontroller/cert-manager", "metacontroller/manual-tls"]) {
    it(`${overlay} is accepted by the apiserver in full (server-side dry run)`, async () => {
      await cluster.kubectl([
        "apply",
        "--server-side",
        "-f",
        fixturePath("metacontroller/cert-manager-crds.yaml"),
      ]);
      await cluster.kubectl([
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/certificates.cert-manager.io",
        "crd/issuers.cert-manager.io",
      ]);
      // Dry run: a registered webhook nobody serves here would slow every later CSPC write.
      const result = await cluster.kubectl([
        "apply",
        "--server-side",
        "--dry-run=server",
        "-k",
        repoPath(overlay),
      ]);
      expect(result.stdout).to.match(
        /validatingwebhookconfiguration\.admissionregistration\.k8s\.io\/cstor-pool-cspc-validation serverside-applied \(server dry run\)/,
      );
      expect(result.stdout).to.match(
        /rolebinding\.rbac\.authorization\.k8s\.io\/cstor-pool-hooks serverside-applied/,
      );
    });
  }

  it("ships samples (the seed examples, corrected) that the API accepts as they are", async () => {
    const result = await cluster.kubectl([
      "apply",
      "--server-side",
      "--dry-run=server",
      "-f",
      repoPath("metacontroller/samples/"),
    ]);
    expect(result.stdout.trim().split("\n")).to.have.length(3);
    expect(result.stdout).to.match(/cstorpoolcluster\.openebs\.io\/cstor-pool-mirror serverside-applied/);
    // The CSI StorageClass sample passes the install's StorageClass admission policy as it is.
    const volumes = await cluster.kubectl([
      "apply",
      "--server-side",
      "--dry-run=server",
      "-f",
      repoPath("metacontroller/samples/volumes/"),
    ]);
    expect(volumes.stdout).to.match(/storageclass\.storage\.k8s\.io\/cstor-csi-mirror-3 serverside-applied/);
  });

  it("puts every namespaced object in one namespace and no namespace on cluster-scoped ones", async () => {
    for (const overlay of [
      "metacontroller/default",
      "metacontroller/cert-manager",
      "metacontroller/manual-tls",
    ]) {
      for (const object of await render(cluster, overlay)) {
        const where = `${overlay}: ${object.kind}/${object.metadata.name}`;
        if (CLUSTER_SCOPED.has(object.kind)) expect(object.metadata.namespace, where).to.equal(undefined);
        else expect(object.metadata.namespace, where).to.equal(INSTALL_NAMESPACE);
      }
    }
  });

  it("points Metacontroller's hooks at paths the hook server serves, through its Service and container port", async () => {
    const objects = await render(cluster, "metacontroller/default");
    const served = new Set(hookRoutes().map((route) => route.path));
    const service = find(objects, "Service", "cstor-pool-hooks");
    const container = find(objects, "Deployment", "cstor-pool-hooks").spec.template.spec.containers[0];
    const controllers = [
      find(objects, "CompositeController", "cstor-pool-cluster"),
      find(objects, "DecoratorController", "cstor-pool-instance"),
      find(objects, "CompositeController", "cstor-volume-config"),
      find(objects, "DecoratorController", "cstor-volume"),
    ];
    const named: string[] = [];
    for (const controller of controllers) {
      for (const [hook, spec] of Object.entries<any>(controller.spec.hooks)) {
        const where = `${controller.kind} ${hook}`;
        expect(spec.version, where).to.equal("v2");
        const webhook = spec.webhook;
        expect(webhook.service.name, where).to.equal(service.metadata.name);
        expect(webhook.service.namespace, where).to.equal(service.metadata.namespace);
        const port = service.spec.ports.find((p: { port: number }) => p.port === webhook.service.port);
        expect(port, `${where}: Service port ${webhook.service.port}`).to.not.equal(undefined);
        const target = container.ports.find((p: { name: string }) => p.name === port.targetPort);
        const env = Object.fromEntries(
          container.env.map((e: { name: string; value?: string }) => [e.name, e.value]),
        );
        expect(String(target.containerPort), where).to.equal(env.PORT);
        expect(served.has(webhook.path), `${where}: ${webhook.path} is not a hook route`).to.equal(true);
        named.push(webhook.path);
      }
    }
    expect(named.sort()).to.deep.equal([
      "/hooks/cspc-customize",
      "/hooks/cspc-finalize",
      "/hooks/cspc-sync",
      "/hooks/cspi-customize",
      "/hooks/cspi-finalize",
      "/hooks/cspi-sync",
      "/hooks/cv-customize",
      "/hooks/cv-status",
      "/hooks/cvc-customize",
      "/hooks/cvc-finalize",
      "/hooks/cvc-sync",
    ]);
  });

  it("registers the admission webhook for CSPC create, update and delete only, on a served HTTPS path", async () => {
    const objects = await render(cluster, "metacontroller/cert-manager");
    const config = find(objects, "ValidatingWebhookConfiguration", "cstor-pool-cspc-validation");
    expect(config.webhooks).to.have.length(1);
    const [webhook] = config.webhooks;
    expect(webhook.rules).to.deep.equal([
      {
        apiGroups: ["openebs.io"],
        apiVersions: ["v1alpha1"],
        operations: ["CREATE", "UPDATE", "DELETE"],
        resources: ["cstorpoolclusters"],
        scope: "Namespaced",
      },
    ]);
    expect(webhook.sideEffects).to.equal("None");
    expect(webhook.failurePolicy).to.be.oneOf(["Ignore", "Fail"]);
    expect(webhook.timeoutSeconds).to.be.at.most(10);
    expect(hookRoutes().map((r) => r.path)).to.include(webhook.clientConfig.service.path);

    const service = find(objects, "Service", webhook.clientConfig.service.name);
    const port = service.spec.ports.find(
      (p: { port: number }) => p.port === webhook.clientConfig.service.port,
    );
    const container = find(objects, "Deployment", "cstor-pool-hooks").spec.template.spec.containers[0];
    const env = Object.fromEntries(
      container.env.map((e: { name: string; value?: string }) => [e.name, e.value]),
    );
    const target = container.ports.find((p: { name: string }) => p.name === port.targetPort);
    expect(String(target.containerPort)).to.equal(env.TLS_PORT);

    const certificate = find(objects, "Certificate", "cstor-pool-hooks-tls");
    expect(certificate.spec.dnsNames).to.include(
      `${service.metadata.name}.${service.metadata.namespace}.svc`,
    );
    expect(config.metadata.annotations?.["cert-manager.io/inject-ca-from"]).to.equal(
      `${certificate.metadata.namespace}/${certificate.metadata.name}`,
    );
    const volume = find(objects, "Deployment", "cstor-pool-hooks").spec.template.spec.volumes.find(
      (v: { name: string }) => v.name === "tls",
    );
    expect(volume.secret.secretName).to.equal(certificate.spec.secretName);
  });

  it("runs the hook server as 2 hardened replicas with a ServiceAccount token for its Events (default install)", async () => {
    const deployment = await getJson(cluster, "deployment", "cstor-pool-hooks", "-n", INSTALL_NAMESPACE);
    const pod = deployment.spec.template.spec;
    expect(deployment.spec.replicas).to.equal(2);
    expect(pod.automountServiceAccountToken).to.equal(true);
    expect(pod.securityContext.runAsNonRoot).to.equal(true);
    expect(pod.securityContext.seccompProfile.type).to.equal("RuntimeDefault");
    const [container] = pod.containers;
    expect(container.securityContext).to.deep.include({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
    });
    expect(container.securityContext.capabilities.drop).to.deep.equal(["ALL"]);
    expect(container.readinessProbe.httpGet.path).to.equal("/readyz");
    expect(container.livenessProbe.httpGet.path).to.equal("/healthz");
    const sa = await getJson(cluster, "serviceaccount", "cstor-pool-hooks", "-n", INSTALL_NAMESPACE);
    expect(sa.automountServiceAccountToken).to.equal(true);
  });

  it("runs the node daemon privileged with only the host paths it needs, and its node and namespace from the downward API", async () => {
    const daemonSet = await getJson(cluster, "daemonset", "cstor-pool-node", "-n", INSTALL_NAMESPACE);
    const pod = daemonSet.spec.template.spec;
    expect(pod.serviceAccountName).to.equal("cstor-pool-node");
    expect(pod.hostPID, "nsenter into the host's mount namespace").to.equal(true);
    expect(pod.hostNetwork ?? false).to.equal(false);
    const hostPaths = pod.volumes
      .filter((v: any) => v.hostPath)
      .map((v: any) => v.hostPath.path)
      .sort();
    expect(hostPaths).to.deep.equal(["/dev", "/run/udev", "/var/openebs"]);
    const [container] = pod.containers;
    expect(container.securityContext.privileged).to.equal(true);
    const env = Object.fromEntries(container.env.map((e: any) => [e.name, e]));
    expect(env.NODE_NAME.valueFrom.fieldRef.fieldPath).to.equal("spec.nodeName");
    expect(env.NAMESPACE.valueFrom.fieldRef.fieldPath).to.equal("metadata.namespace");
    const commands = commandsFromEnv(
      Object.fromEntries(container.env.filter((e: any) => e.value).map((e: any) => [e.name, e.value])),
    );
    expect(commands.zpool, "the host's zpool, in the host's mount namespace").to.deep.equal([
      "nsenter",
      "-t",
      "1",
      "-m",
      "--",
      "zpool",
    ]);
    const lockDir = container.env.find((e: any) => e.name === "LOCK_DIR").value;
    const openebs = container.volumeMounts.find((m: any) => m.mountPath === "/var/openebs");
    expect(lockDir.startsWith(`${openebs.mountPath}/`), "the host lock lives on the host").to.equal(true);
  });

  it("metacontroller/monitoring adds PodMonitors that select the daemon's, the hook server's, the volume targets' and the CSI driver's pods on their metrics ports, the alerts and the Grafana dashboards", async () => {
    const objects = await render(cluster, "metacontroller/monitoring");
    for (const [monitor, workload] of [
      ["cstor-pool-node", find(objects, "DaemonSet", "cstor-pool-node")],
      ["cstor-pool-hooks", find(objects, "Deployment", "cstor-pool-hooks")],
      ["cstor-volume-target", volumeTarget()],
      ["cstor-csi-controller", find(objects, "Deployment", "cstor-csi-controller")],
      ["cstor-csi-node", find(objects, "DaemonSet", "cstor-csi-node")],
    ] as const) {
      const spec = find(objects, "PodMonitor", monitor).spec;
      const template = workload.spec.template;
      for (const [key, value] of Object.entries(spec.selector.matchLabels as Record<string, string>))
        expect(template.metadata.labels[key], `${monitor} selects ${key}`).to.equal(value);
      const ports = template.spec.containers.flatMap((c: any) => (c.ports ?? []).map((p: any) => p.name));
      expect(ports, `${monitor} scrapes a port the pod names`).to.include(spec.podMetricsEndpoints[0].port);
    }
    // CStorVolumeTargetDown names the volume on `up`, which carries only the target's labels: the pod's volume label.
    const [endpoint] = find(objects, "PodMonitor", "cstor-volume-target").spec.podMetricsEndpoints;
    const volumeLabel = endpoint.relabelings.find((r: any) => r.targetLabel === "volume");
    expect(volumeLabel.sourceLabels).to.deep.equal([
      `__meta_kubernetes_pod_label_${LABEL.persistentVolume.replace(/[^a-zA-Z0-9_]/g, "_")}`,
    ]);
    expect(volumeTarget().spec.template.metadata.labels[LABEL.persistentVolume]).to.equal("pvc-1");
    expect(find(objects, "PrometheusRule", "cstor-pool").metadata.namespace).to.equal(INSTALL_NAMESPACE);
    const dashboards = find(objects, "ConfigMap", "cstor-pool-dashboards");
    expect(dashboards.metadata.namespace).to.equal(INSTALL_NAMESPACE);
    expect(
      dashboards.metadata.labels?.grafana_dashboard,
      "the label the Grafana sidecar loads dashboards by",
    ).to.equal("1");
    const shipped = shippedDashboards();
    expect(Object.keys(dashboards.data).sort()).to.deep.equal([...shipped.keys()]);
    for (const [file, dashboard] of shipped)
      expect(JSON.parse(dashboards.data[file]), file).to.deep.equal(dashboard);
  });

  it("gives the hook server and the node daemon one stale-heartbeat setting: the same ConfigMap key", async () => {
    const settings = await getJson(cluster, "configmap", "cstor-pool-settings", "-n", INSTALL_NAMESPACE);
    expect(settings.data).to.deep.equal({ [STALE_STATUS_SECONDS_ENV]: "300" });
    const hooks = await getJson(cluster, "deployment", "cstor-pool-hooks", "-n", INSTALL_NAMESPACE);
    const daemonSet = await getJson(cluster, "daemonset", "cstor-pool-node", "-n", INSTALL_NAMESPACE);
    for (const workload of [hooks, daemonSet]) {
      const variable = workload.spec.template.spec.containers[0].env.find(
        (e: { name: string }) => e.name === STALE_STATUS_SECONDS_ENV,
      );
      expect(variable?.valueFrom, workload.metadata.name).to.deep.equal({
        configMapKeyRef: { name: "cstor-pool-settings", key: STALE_STATUS_SECONDS_ENV },
      });
    }
  });

  it("runs the CSI driver: attach required, its controller beside the sidecars on one socket, its node beside the registrar", async () => {
    const objects = await render(cluster, "metacontroller/default");
    expect(find(objects, "CSIDriver", CSI.driverName).spec).to.deep.include({
      attachRequired: true,
      volumeLifecycleModes: ["Persistent"],
    });
    const controller = find(objects, "Deployment", "cstor-csi-controller").spec.template.spec;
    expect(controller.serviceAccountName).to.equal("cstor-csi-controller");
    const args = (name: string, spec = controller) =>
      spec.containers.find((c: { name: string }) => c.name === name).args as string[];
    expect(args("csi-driver")).to.deep.equal(["--mode=controller", "--endpoint=unix:///csi/csi.sock"]);
    for (const sidecar of [
      "csi-provisioner",
      "csi-attacher",
      "csi-resizer",
      "csi-snapshotter",
      "liveness-probe",
    ])
      expect(args(sidecar), sidecar).to.include("--csi-address=/csi/csi.sock");
    expect(args("csi-provisioner"), "the claim reaches CreateVolume").to.include("--extra-create-metadata");
    expect(args("csi-snapshotter"), "the VolumeSnapshot reaches CreateSnapshot").to.include(
      "--extra-create-metadata",
    );
    const node = find(objects, "DaemonSet", "cstor-csi-node").spec.template.spec;
    expect(args("csi-driver", node)).to.deep.equal(["--mode=node", "--endpoint=unix:///csi/csi.sock"]);
    expect(args("node-driver-registrar", node)).to.include(
      `--kubelet-registration-path=/var/lib/kubelet/plugins/${CSI.driverName}/csi.sock`,
    );
    expect(
      find(objects, "ServiceAccount", "cstor-csi-node").automountServiceAccountToken,
      "no API rights",
    ).to.equal(false);
  });

  it("runs the volume targets as the ServiceAccount their Deployments name, and hands the hook server the CHAP key from an optional Secret", async () => {
    const objects = await render(cluster, "metacontroller/default");
    const controller = find(objects, "CompositeController", "cstor-volume-config");
    expect(
      controller.spec.childResources.map(
        (c: { apiVersion: string; resource: string }) => `${c.apiVersion} ${c.resource}`,
      ),
      "the CHAP Secret is a child of the volume",
    ).to.include("v1 secrets");
    const account = find(objects, "ServiceAccount", TARGET_SERVICE_ACCOUNT);
    expect(account.automountServiceAccountToken, "the agent writes status.target").to.equal(true);
    expect(volumeTarget().spec.template.spec.serviceAccountName).to.equal(account.metadata.name);
    const binding = find(objects, "RoleBinding", TARGET_SERVICE_ACCOUNT);
    expect(binding.subjects).to.deep.equal([
      { kind: "ServiceAccount", name: TARGET_SERVICE_ACCOUNT, namespace: INSTALL_NAMESPACE },
    ]);
    expect(find(objects, "Role", binding.roleRef.name).rules).to.deep.equal([
      { apiGroups: ["openebs.io"], resources: ["cstorvolumes"], verbs: ["get", "list", "watch"] },
      { apiGroups: ["openebs.io"], resources: ["cstorvolumes/status"], verbs: ["patch"] },
      {
        apiGroups: ["openebs.io"],
        resources: ["cstorvolumereplicas"],
        verbs: ["get", "list", "watch", "patch"],
      },
      {
        apiGroups: ["openebs.io"],
        resources: ["cstorvolumesnapshots"],
        verbs: ["get", "list", "watch", "patch"],
      },
      { apiGroups: ["openebs.io"], resources: ["cstorvolumesnapshots/status"], verbs: ["patch"] },
      { apiGroups: [""], resources: ["pods"], verbs: ["list"] },
      { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
    ]);
    for (const policy of ["cstor-volume-target-limits", "cstor-volume-target-snapshot-limits"])
      expect(find(objects, "ValidatingAdmissionPolicyBinding", policy).spec.policyName).to.equal(policy);

    const hooks = await getJson(cluster, "deployment", "cstor-pool-hooks", "-n", INSTALL_NAMESPACE);
    const variable = hooks.spec.template.spec.containers[0].env.find(
      (e: { name: string }) => e.name === CHAP_KEY_ENV,
    );
    expect(variable?.valueFrom, "without the Secret the server still starts").to.deep.equal({
      secretKeyRef: { name: CHAP_KEY_SECRET, key: CHAP_KEY_SECRET_KEY, optional: true },
    });
  });
});
