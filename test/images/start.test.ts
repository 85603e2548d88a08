// Every image, started as the cluster starts it (docs/adr/0049-the-images-built-by-buildah-from-the-dockerfile.md):
// built once per run by npm run images' own code, then each run by podman from its workload's pod spec
// (testkit/podman-pod.ts): the hook server's and the node daemon's as metacontroller/default renders them, the pool
// pod's and the volume target's as the hooks write them. What each must do there, on this machine's stand-ins for a
// node: the host's zfs-fuse (nsenter into a host process, as the pods enter PID 1), a zfs-fuse node of its own
// (testkit/zfs-node.ts), the tests' kube-apiserver with each pod's ServiceAccount token.
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { parse, stringify } from "yaml";
import { API_VERSION } from "../../api/constants.js";
import { canonicalize } from "../../lib/canonical.js";
import { POOL_CONTAINER, poolDeployment } from "../../lib/cspi/deployment.js";
import { DEFAULT_HOOK_CONFIG } from "../../lib/hook-config.js";
import { nodeLeaseName, zpoolName } from "../../lib/names.js";
import {
  CHAP_KEY_SECRET,
  CHAP_KEY_SECRET_KEY,
  CHAP_PASSWORD_KEY,
  CHAP_USERNAME_KEY,
  chapSecretName,
  volumeChap,
} from "../../lib/volume/chap.js";
import {
  TARGET_CONTAINER,
  TARGET_METRICS_PORT,
  TARGET_SERVICE_ACCOUNT,
  cstorVolume,
  targetDeployment,
} from "../../lib/volume/children.js";
import { replicaIqn, targetInitiatorIqn } from "../../lib/volume/iqn.js";
import { LOCAL_EXIT } from "../../node-daemon/local.js";
import { REPLICA_FILE } from "../../zfs/layout.js";
import { parseZpoolStatus } from "../../zfs/parse.js";
import {
  freePorts,
  getIfPresent,
  INSTALL_NAMESPACE,
  projectInstalled,
  waitUntil,
  type KubeCluster,
} from "../../testkit/kube.js";
import { CSI } from "../../api/constants.js";
import { CsiClient } from "../../testkit/csi-client.js";
import { PodmanPod } from "../../testkit/podman-pod.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";
import { cspiFor, requireZfs, zpool, ZfsSandbox } from "../../testkit/zfs.js";
import { makeFileReplica } from "../support/file-replica.js";
import { goldenCases, readYaml } from "../support/golden.js";
import { builtImages, findObject, renderOverlay } from "../support/images.js";
import { AUTHENTICATION_FAILURE, inquiry, readLun, writeLun, type Login } from "../support/initiator.js";
import { newVolume } from "../support/new-volume.js";

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
/** A field of /proc/<pid>/status: "Uid:\t1000\t1000…" → "1000 1000 1000 1000". */
const statusField = (status: string, field: string) =>
  new RegExp(`^${field}:\\s*(.*)$`, "m").exec(status)?.[1].trim().split(/\s+/).join(" ");
/** ZFS_COMMAND_PREFIX entering this host's mount namespace through a host process, as the pods enter PID 1's. */
const HOST_ZFS_PREFIX = JSON.stringify(["nsenter", "-t", String(process.pid), "-m", "--"]);

describe("images: each started as the cluster starts it", function () {
  this.timeout(10 * 60_000);
  let objects: any[];
  const dirs: string[] = [];
  const pods: PodmanPod[] = [];
  /** A directory standing for a host path, removed after the test. */
  const hostDir = (label: string) => {
    const dir = mkdtempSync(join(tmpdir(), `cstor-image-${label}-`));
    dirs.push(dir);
    return dir;
  };
  const started = async (pod: Promise<PodmanPod>) => {
    pods.push(await pod);
    return pods.at(-1)!;
  };
  const settings = () => {
    const map = findObject(objects, "ConfigMap", "cstor-pool-settings");
    return { [map.metadata.name]: map.data };
  };

  before(async function () {
    // Cold, the build makes the images from nothing (about two minutes); then a few seconds.
    this.timeout(30 * 60_000);
    await builtImages();
    objects = renderOverlay("metacontroller/default");
  });
  afterEach(async () => {
    for (const pod of pods.splice(0)) await pod.remove();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("the hook server runs as uid 1000 with no capabilities on a read-only root, answers its probes and a golden cspc-sync request, and drains on SIGTERM", async () => {
    const pod = await started(
      PodmanPod.start({
        label: "hooks",
        workload: findObject(objects, "Deployment", "cstor-pool-hooks"),
        nodeName: "node-a",
        hostPaths: {},
        configMaps: settings(),
      }),
    );
    await pod.awaitProbe("hooks", "livenessProbe", 200);
    await pod.awaitProbe("hooks", "readinessProbe", 200);

    const status = (await pod.exec("hooks", ["cat", "/proc/1/status"])).stdout;
    expect(statusField(status, "Uid"), "its process's user").to.equal("1000 1000 1000 1000");
    expect(statusField(status, "Gid")).to.equal("1000 1000 1000 1000");
    expect(statusField(status, "CapEff"), "capabilities: drop ALL").to.equal("0000000000000000");
    expect(statusField(status, "NoNewPrivs"), "allowPrivilegeEscalation: false").to.equal("1");
    const written = await pod.exec("hooks", ["touch", "/app/written"]);
    expect(written.code).to.not.equal(0);
    expect(written.stderr).to.match(/Read-only file system/);
    expect((await pod.exec("hooks", ["touch", "/tmp/written"])).code, "its /tmp emptyDir").to.equal(0);

    // A request whose answer does not depend on the clock: the server's is the real one.
    const golden = goldenCases("cspc-sync").find((c) => c.name === "fixed-point")!;
    const response = await fetch(`http://127.0.0.1:${pod.hostPort(8080)}/hooks/cspc-sync`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(golden.read("request.yaml")),
    });
    expect(response.status).to.equal(200);
    expect(canonicalize(await response.json())).to.deep.equal(
      canonicalize(readYaml(join(golden.dir, "response.yaml"))),
    );

    expect(await pod.stop("hooks"), `exits 0 on SIGTERM${await pod.tail("hooks")}`).to.equal(0);
    const said = (await pod.logs("hooks")).split("\n").filter((line) => line.startsWith("{"));
    expect(said.map((line) => (JSON.parse(line) as { msg: string }).msg)).to.include.members([
      "draining",
      "stopped",
    ]);
  });

  describe("the node daemon, on a zfs-fuse node", () => {
    let sandbox: ZfsSandbox;
    let node: ZfsNode;
    before(async () => {
      requireZfs();
      sandbox = new ZfsSandbox();
      node = await startNode(`img-${sandbox.id}`);
    });
    after(async () => {
      await node?.stop();
      sandbox?.cleanup();
    });
    const daemonSet = () => findObject(objects, "DaemonSet", "cstor-pool-node");
    const hostPaths = () => ({
      "/dev": "/dev",
      "/run/udev": hostDir("udev"),
      "/var/openebs": hostDir("openebs"),
    });

    it("local mode, run in its DaemonSet's container, creates a CSPI's pool on the node through the image's nsenter", async () => {
      const cspi = cspiFor(sandbox.name("local"), node.name, [
        { type: "mirror", devices: [sandbox.file("d1"), sandbox.file("d2")] },
      ]);
      const file = join(sandbox.dir, "cspi.yaml");
      writeFileSync(file, stringify(cspi));
      const result = await PodmanPod.run(
        {
          label: "node-daemon-local",
          workload: daemonSet(),
          nodeName: node.name,
          hostPaths: hostPaths(),
          configMaps: settings(),
          // The node's mount namespace instead of PID 1's; its devices are the sandbox's files, mounted where they are.
          env: {
            "node-daemon": {
              ZFS_COMMAND_PREFIX: node.commandPrefixEnv,
              DEVICE_ROOTS: JSON.stringify([`${sandbox.dir}/`]),
            },
          },
          commands: {
            "node-daemon": ["node", "dist/cli/cstor-pool.js", "node-daemon", "--cspi-file", file, "--once"],
          },
          samePaths: [sandbox.dir],
        },
        "node-daemon",
      );
      expect(result.code, result.stdout + result.stderr).to.equal(LOCAL_EXIT.changed);
      const report = parse(result.stdout) as {
        applied: unknown[];
        status: { phase: string; importedOn: string };
      };
      expect(report.applied).to.deep.equal([{ action: "create", result: "done" }]);
      expect(report.status).to.include({ phase: "ONLINE", importedOn: node.name });
      const pool = zpoolName(cspi.metadata.name!);
      expect(node.imported(pool), "the node holds the pool").to.equal(true);
      expect(
        parseZpoolStatus(zpool("status")).map((p) => p.name),
        "this host's ZFS does not",
      ).to.not.include(pool);
    });

    it("its DaemonSet command starts with the pod's ServiceAccount token, answers its liveness probe, renews its node's Lease and stops on SIGTERM", async () => {
      const cluster = await projectInstalled();
      const identity = await cluster.serviceAccount(INSTALL_NAMESPACE, "cstor-pool-node");
      const [metricsPort] = await freePorts(1);
      const pod = await started(
        PodmanPod.start({
          label: "node-daemon",
          workload: daemonSet(),
          nodeName: node.name,
          hostPaths: hostPaths(),
          configMaps: settings(),
          // The host's network reaches the tests' apiserver on loopback; the metrics port is then a free one.
          hostNetwork: { podIP: "127.0.0.1", ports: { 9500: metricsPort } },
          env: {
            "node-daemon": { ZFS_COMMAND_PREFIX: node.commandPrefixEnv, METRICS_PORT: String(metricsPort) },
          },
          serviceAccount: { token: identity.token, caFile: cluster.caFile, server: cluster.server },
        }),
      );
      await pod.awaitProbe("node-daemon", "livenessProbe", 200);
      await waitUntil(
        async () => (await pod.logs("node-daemon")).includes('"msg":"node daemon started"'),
        60_000,
        () => "the daemon never logged that it started",
      );
      const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${INSTALL_NAMESPACE}/leases/${nodeLeaseName(node.name)}`;
      let lease: any;
      await waitUntil(
        async () => Boolean((lease = await getIfPresent(cluster, leasePath))?.spec?.renewTime),
        60_000,
        () => `no Lease ${nodeLeaseName(node.name)} renewed`,
      );
      expect(lease.spec.holderIdentity).to.equal(node.name);
      expect(await pod.stop("node-daemon"), `exits 0 on SIGTERM${await pod.tail("node-daemon")}`).to.equal(0);
      await cluster.request(cluster.admin, "DELETE", leasePath);
    });
  });

  it("the pool agent is ready for its pool imported on the node and serves a replica through the image's tgtd, to the volume's target with its CHAP only", async () => {
    requireZfs();
    const sandbox = new ZfsSandbox();
    try {
      const cspi = sandbox.name("agent");
      const pool = zpoolName(cspi);
      zpool("create", "-o", "failmode=continue", "-O", "canmount=off", pool, sandbox.file("p1"));
      const {
        volume,
        replica,
        dir: replicas,
      } = makeFileReplica(sandbox, { pool, cspi }, ([program, ...args]: string[]) =>
        execFileSync(program, args),
      );
      const key = randomBytes(32).toString("hex");
      const pod = await started(
        PodmanPod.start({
          label: "pool",
          workload: poolDeployment(cspiFor(cspi, "node-a", []), DEFAULT_HOOK_CONFIG.poolPod),
          nodeName: "node-a",
          hostPaths: { "/dev": "/dev", [`/var/openebs/cstor-pool/${cspi}`]: hostDir("pool") },
          secrets: { [CHAP_KEY_SECRET]: { [CHAP_KEY_SECRET_KEY]: key } },
          // This host's ZFS through a host process instead of PID 1; the replica's file where a node's zvol would be.
          env: { [POOL_CONTAINER]: { ZFS_COMMAND_PREFIX: HOST_ZFS_PREFIX } },
          samePaths: [sandbox.dir],
        }),
      );
      expect(await pod.awaitProbe(POOL_CONTAINER, "readinessProbe", 200, /is ONLINE/)).to.equal(
        `pool ${pool} is ONLINE\n`,
      );
      await pod.awaitProbe(POOL_CONTAINER, "livenessProbe", 200);
      await waitUntil(
        async () => (await pod.logs(POOL_CONTAINER)).includes('"msg":"replica exported"'),
        60_000,
        () => "the agent never exported the replica",
      );

      const chap = volumeChap(key, volume);
      const login: Login = {
        portal: `127.0.0.1:${pod.hostPort(3260)}`,
        iqn: replicaIqn(volume),
        initiator: targetInitiatorIqn(volume),
        user: chap.user,
        password: chap.password,
      };
      const refused = await inquiry({ ...login, user: undefined, password: undefined });
      expect(refused.stderr, "without CHAP").to.match(AUTHENTICATION_FAILURE);
      const data = randomBytes(replica.bytes);
      const [written, readBack] = [join(sandbox.dir, "written.bin"), join(sandbox.dir, "read.bin")];
      writeFileSync(written, data);
      await writeLun(login, written);
      expect(
        sha256(readFileSync(join(replicas, replica.dataset, REPLICA_FILE))),
        "in the replica's file",
      ).to.equal(sha256(data));
      await readLun(login, readBack);
      expect(sha256(readFileSync(readBack)), "read back over iSCSI").to.equal(sha256(data));

      expect(
        await pod.stop(POOL_CONTAINER),
        `the agent exits 0 on SIGTERM${await pod.tail(POOL_CONTAINER)}`,
      ).to.equal(0);
      // tgtd lets go of the replica's file before the pool goes.
      await pod.remove();
    } finally {
      sandbox.cleanup();
    }
  });

  it("the CSI driver's controller runs as uid 1000 on a read-only root with its ServiceAccount's token, serves identity and controller on its socket and /healthz, and stops on SIGTERM", async () => {
    const cluster = await projectInstalled();
    const identity = await cluster.serviceAccount(INSTALL_NAMESPACE, "cstor-csi-controller");
    const deployment = findObject(objects, "Deployment", "cstor-csi-controller");
    // The sidecars are the Kubernetes project's images (test/integration/csi-sidecars.test.ts runs them built from
    // their Go modules); here the driver's own container runs alone.
    const template = deployment.spec.template;
    const workload = {
      ...deployment,
      spec: {
        ...deployment.spec,
        template: {
          ...template,
          spec: {
            ...template.spec,
            containers: template.spec.containers.filter((c: any) => c.name === "csi-driver"),
          },
        },
      },
    };
    const [metricsPort] = await freePorts(1);
    const pod = await started(
      PodmanPod.start({
        label: "csi",
        workload,
        nodeName: "node-a",
        hostPaths: {},
        hostNetwork: { podIP: "127.0.0.1", ports: { 9505: metricsPort, 9808: metricsPort + 1 } },
        env: { "csi-driver": { METRICS_PORT: String(metricsPort) } },
        serviceAccount: { token: identity.token, caFile: cluster.caFile, server: cluster.server },
      }),
    );
    const socket = join(pod.emptyDirPath("socket-dir"), "csi.sock");
    await waitUntil(
      async () => existsSync(socket),
      60_000,
      () => `the driver made no socket at ${socket}`,
    ).catch(async (error: Error) => {
      throw new Error(`${error.message}${await pod.tail("csi-driver")}`);
    });
    const client = new CsiClient(socket);
    try {
      const info = await client.call("Identity", "GetPluginInfo", {}, { timeoutMs: 10_000 });
      expect(info.name).to.equal(CSI.driverName);
      const probe = await client.call("Identity", "Probe", {}, { timeoutMs: 10_000 });
      expect(probe.ready?.value, "ready: it reads the API with its token").to.equal(true);
      const caps = await client.call("Controller", "ControllerGetCapabilities", {}, { timeoutMs: 10_000 });
      expect((caps.capabilities ?? []).map((c: any) => c.rpc?.type)).to.include.members([
        "CREATE_DELETE_VOLUME",
        "PUBLISH_UNPUBLISH_VOLUME",
        "EXPAND_VOLUME",
      ]);
    } finally {
      client.close();
    }
    const healthz = await fetch(`http://127.0.0.1:${metricsPort}/healthz`);
    expect(healthz.status).to.equal(200);
    const status = (await pod.exec("csi-driver", ["cat", "/proc/1/status"])).stdout;
    expect(statusField(status, "Uid")).to.equal("1000 1000 1000 1000");
    const written = await pod.exec("csi-driver", ["touch", "/app/written"]);
    expect(written.stderr).to.match(/Read-only file system/);
    expect(await pod.stop("csi-driver"), `exits 0 on SIGTERM${await pod.tail("csi-driver")}`).to.equal(0);
    expect(existsSync(socket), "its socket removed").to.equal(false);
  });

  it("the volume target has mdadm, iscsiadm and nsenter; its agent starts with its ServiceAccount's token, reads its CStorVolume and goes on to the node's iSCSI initiator, and stops on SIGTERM", async () => {
    const cluster: KubeCluster = await projectInstalled();
    const volume = `img-${randomBytes(3).toString("hex")}`;
    const inventory = newVolume(volume, INSTALL_NAMESPACE, {
      capacity: "1Gi",
      cstorPoolCluster: "cspc-img",
      replicaCount: 1,
    });
    const cvPath = `/apis/${API_VERSION}/namespaces/${INSTALL_NAMESPACE}/cstorvolumes`;
    const created = await cluster.request(
      cluster.admin,
      "POST",
      cvPath,
      cstorVolume(inventory, "10.0.0.10", ["pool-img"]),
    );
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    try {
      const identity = await cluster.serviceAccount(INSTALL_NAMESPACE, TARGET_SERVICE_ACCOUNT);
      const chap = volumeChap(randomBytes(32).toString("hex"), volume);
      const [port] = await freePorts(1);
      const pod = await started(
        PodmanPod.start({
          label: "target",
          workload: targetDeployment(inventory, DEFAULT_HOOK_CONFIG.volumeTarget),
          nodeName: "node-a",
          // This VM's kernel has no modules (an empty directory stands for them) and no configfs: its sysfs has
          // no /sys/kernel/config to mount on. The agent touches LIO only once it serves an array.
          hostPaths: { "/dev": "/dev", "/sys/kernel/config": null, "/lib/modules": hostDir("modules") },
          secrets: {
            [chapSecretName(volume)]: { [CHAP_USERNAME_KEY]: chap.user, [CHAP_PASSWORD_KEY]: chap.password },
          },
          hostNetwork: { podIP: "127.0.0.1", ports: { [TARGET_METRICS_PORT]: port } },
          env: {
            [TARGET_CONTAINER]: {
              PORT: String(port),
              ISCSI_COMMAND_PREFIX: JSON.stringify([
                "nsenter",
                "--target",
                String(process.pid),
                "--net",
                "--",
              ]),
            },
          },
          serviceAccount: { token: identity.token, caFile: cluster.caFile, server: cluster.server },
        }),
      );
      for (const [tool, version] of [
        ["mdadm", /mdadm - v4\./],
        ["iscsiadm", /iscsiadm version 2\./],
        ["nsenter", /nsenter from util-linux 2\./],
      ] as const) {
        const ran = await pod.exec(TARGET_CONTAINER, [tool, "--version"]);
        expect(ran.stdout + ran.stderr, tool).to.match(version);
      }
      await pod.awaitProbe(TARGET_CONTAINER, "livenessProbe", 200);
      // Its first pass reads the volume through the API with the pod's token, then sets up the node's iSCSI
      // initiator: iscsiadm in the host's network namespace. On a kernel with iSCSI the pass goes on and writes
      // the volume's status; this VM's kernel has no iSCSI transport (the data path runs in user-mode Linux,
      // docs/data-path-tests.md), and the pass stops at iscsiadm, which says so.
      const kernelIscsi = existsSync("/sys/class/iscsi_transport");
      const passFailures = async () =>
        (await pod.logs(TARGET_CONTAINER))
          .split("\n")
          .filter((line) => line.includes('"msg":"pass failed"'))
          .map((line) => (JSON.parse(line) as { error: string }).error);
      let target: any;
      await waitUntil(
        async () =>
          kernelIscsi
            ? (target = (await getIfPresent(cluster, `${cvPath}/${volume}`))?.status?.target) !== undefined
            : (await passFailures()).length > 0,
        60_000,
        () => (kernelIscsi ? "the agent wrote no status.target" : "the agent's first pass never ended"),
      ).catch(async (error: Error) => {
        throw new Error(`${error.message}${await pod.tail(TARGET_CONTAINER)}`);
      });
      if (kernelIscsi) expect(target).to.include({ state: "Starting", node: "node-a" });
      else
        expect((await passFailures())[0]).to.match(
          new RegExp(
            `^nsenter --target ${process.pid} --net -- iscsiadm -m iface -I cstor-\\w+ .* exited with \\d+: iscsiadm: Could not scan /sys/class/iscsi_transport`,
          ),
        );
      expect((await pod.probe(TARGET_CONTAINER, "readinessProbe")).status, "not serving yet").to.equal(503);
      expect(
        await pod.stop(TARGET_CONTAINER),
        `exits 0 on SIGTERM${await pod.tail(TARGET_CONTAINER)}`,
      ).to.equal(0);
    } finally {
      await cluster.request(cluster.admin, "DELETE", `${cvPath}/${volume}`);
    }
  });
});
