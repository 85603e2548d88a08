// The harness the volume target's end-to-end test runs on (testkit/target-world.ts, docs/data-path-tests.md),
// each piece proved on its own: three real node daemons make a pool and a replica each on their zfs-fuse nodes,
// three pool sites (tgtd on a pod address of its own, the pool agent, a Pod object) export them, and one
// user-mode-linux guest reaches the apiserver through the API bridge, runs processes as a container runtime
// would, and reads every replica's LUN 1 over iSCSI with the volume target's initiator name and the volume's CHAP.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { expect } from "chai";
import { parse, stringify } from "yaml";
import { API_VERSION, LABEL } from "../../api/constants.js";
import { POOL_APP } from "../../lib/cspi/deployment.js";
import { targetInitiatorIqn } from "../../lib/volume/iqn.js";
import { startTargetWorld, type TargetWorld } from "../../testkit/target-world.js";
import type { GuestProcess, GuestProcessOptions } from "../../testkit/uml/guest-process.js";
import type { UmlGuest } from "../../testkit/uml/guest.js";

const MiB = 1024 * 1024;
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

// What the volume target reads, with @kubernetes/client-node as it uses it, once per kubeconfig given: the
// volume's CVRs and the pool pods (the portals). One JSON line each: what it read, or the error.
const READ_AS_TARGET = `
const k8s = require("@kubernetes/client-node");
const [group, version, namespace, replicas, pools, ...configs] = process.argv.slice(1);
(async () => {
  for (const file of configs) {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(file);
    try {
      const cvrs = await kc.makeApiClient(k8s.CustomObjectsApi).listNamespacedCustomObject({
        group, version, namespace, plural: "cstorvolumereplicas", labelSelector: replicas,
      });
      const pods = await kc.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace, labelSelector: pools });
      console.log(JSON.stringify({
        file,
        cvrs: cvrs.items.map((item) => item.metadata.name).sort(),
        podIPs: pods.items.map((pod) => pod.status.podIP).sort(),
      }));
    } catch (error) {
      console.log(JSON.stringify({ file, error: String(error?.message ?? error) }));
    }
  }
})();
`;

describe("testkit: the volume target's world (API bridge, guest processes, pool sites)", function () {
  this.timeout(5 * 60_000);
  let world: TargetWorld;
  let guest: UmlGuest;
  const processes: GuestProcess[] = [];
  const start = async (options: GuestProcessOptions) => {
    const started = await world.startProcess(guest, options);
    processes.push(started);
    return started;
  };

  before(async function () {
    this.timeout(5 * 60_000);
    world = await startTargetWorld({ replicas: 3, capacity: "16Mi", guests: ["target-a"] });
    guest = world.guests.get("target-a")!;
  });

  afterEach(function () {
    if (this.currentTest?.state !== "failed") return;
    console.log(guest?.consoleTail(60) ?? "(no guest)");
    for (const p of processes) console.log(p.tail());
    for (const place of world?.replicas ?? [])
      console.log(
        `${place.site.agent.tail()}\n--- tgtd of ${place.cspi.metadata.name}:\n${place.site.tgtd.output()}`,
      );
  });

  after(async function () {
    this.timeout(3 * 60_000);
    await world?.stop();
    if (process.env.UML_TIMINGS && world) console.log(world.timings.map((t) => `    ${t}`).join("\n"));
  });

  it("reaches the apiserver from a guest through the bridge as the target's ServiceAccount, TLS verified against the certificate's name", async () => {
    const identity = await world.cluster.serviceAccount(world.namespace, "cstor-volume-target");
    const kubeconfig = world.guestKubeconfig(identity);
    const config = parse(readFileSync(kubeconfig, "utf8"));
    expect(config.clusters[0].cluster.server).to.equal(
      `https://${world.network.hostAddress}:${world.bridge.port}`,
    );
    // The same kubeconfig without tls-server-name: the certificate does not name the bridge's address.
    delete config.clusters[0].cluster["tls-server-name"];
    const unnamed = kubeconfig.replace(/\.kubeconfig$/, "-unnamed.kubeconfig");
    writeFileSync(unnamed, stringify(config), { mode: 0o600 });

    const reader = await start({
      label: "read-as-target",
      argv: [
        process.execPath,
        "-e",
        READ_AS_TARGET,
        API_VERSION.split("/")[0],
        API_VERSION.split("/")[1],
        world.namespace,
        `${LABEL.replicaVolume}=${world.volume}`,
        `${LABEL.app}=${POOL_APP},${LABEL.cspc}=${world.cspc}`,
        kubeconfig,
        unnamed,
      ],
      env: { PATH: "/usr/bin:/bin" },
    });
    // node and @kubernetes/client-node start in 5-40 s in a guest, depending on the host's load.
    expect(await reader.exited(120_000), reader.tail()).to.deep.equal({ code: 0 });
    const [named, withoutName] = reader
      .output()
      .trim()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line));
    expect(named, reader.output()).to.deep.equal({
      file: kubeconfig,
      cvrs: world.replicas.map((place) => place.cvr).sort(),
      podIPs: world.replicas.map((place) => place.site.podIP).sort(),
    });
    expect(withoutName.error, reader.output()).to.match(/altnames/);
  });

  it("runs a guest process as a container runtime would: its argv, only its env, its cwd; TERM to it, KILL to its group", async () => {
    const stoppable = await start({
      label: "stoppable",
      argv: [
        "bash",
        "-c",
        'echo "argv=$0|$1|$2"; echo "env=${GREETING-unset}|${HOME-unset}"; echo "cwd=$PWD"; echo "pid=$$"; ' +
          'sleep 600 & trap "kill $!; echo TERM; exit 7" TERM; wait',
        "zero",
        "one two",
        "three",
      ],
      env: { GREETING: "hello world", PATH: "/usr/bin:/bin" },
      cwd: "/usr",
    });
    await stoppable.printed(/^pid=/m);
    expect(stoppable.output()).to.equal(
      `argv=zero|one two|three\nenv=hello world|unset\ncwd=/usr\npid=${stoppable.pid}\n`,
    );
    expect(stoppable.ended()).to.equal(undefined);
    await stoppable.signal("TERM");
    expect(await stoppable.exited(30_000)).to.deep.equal({ code: 7 });
    expect(stoppable.output()).to.match(/\nTERM\n$/);

    // KILL ends the process and what it started (a container's processes die with it): the child is gone too.
    const killable = await start({
      label: "killable",
      argv: ["bash", "-c", "sleep 600 & echo child=$!; wait"],
      env: { PATH: "/usr/bin:/bin" },
    });
    await killable.printed(/^child=\d+$/m);
    const child = /^child=(\d+)$/m.exec(killable.output())![1];
    await killable.signal("KILL");
    expect(await killable.exited(30_000)).to.deep.equal({ code: 137, signal: "KILL" });
    const alive = await guest.exec(`kill -0 ${child}`);
    expect(alive.code, "the killed process's child").to.not.equal(0);

    const missing = await start({
      label: "missing",
      argv: ["/nonexistent/program"],
      env: {},
    });
    expect(await missing.exited(30_000)).to.deep.equal({ code: 127 });
  });

  it("publishes each pool site as its pool pod: the template's labels, Running and Ready at an address of its own", async () => {
    for (const { site, cspi } of world.replicas) {
      const selector = encodeURIComponent(`${LABEL.app}=${POOL_APP},${LABEL.cspi}=${cspi.metadata.name}`);
      const pods = (
        await world.cluster.request(
          world.cluster.admin,
          "GET",
          `/api/v1/namespaces/${world.namespace}/pods?labelSelector=${selector}`,
        )
      ).body.items;
      expect(pods.map((p: any) => p.metadata.name)).to.deep.equal([site.podName]);
      expect(pods[0].status.phase).to.equal("Running");
      expect(pods[0].status.podIP).to.equal(site.podIP);
      expect(pods[0].status.conditions.find((c: any) => c.type === "Ready").status).to.equal("True");
    }
    expect(new Set(world.replicas.map((place) => place.site.podIP)).size).to.equal(3);
  });

  const readReplicas = async (places: TargetWorld["replicas"]) => {
    const lines = places.map(
      ({ site }) =>
        `d=$(iscsi_disk ${world.replicaIqn} 1 30 ${site.portal}) || exit 1
echo "${site.portal} $(dd if=$d bs=1M count=1 iflag=direct status=none | sha256sum)"`,
    );
    return (await guest.run(lines.join("\n"), { timeoutMs: 120_000 }))
      .trim()
      .split("\n")
      .map((line) => line.split(" ").slice(0, 2));
  };

  it("serves every replica at its pool's portal to the target's initiator name with the volume's CHAP: LUN 1 holds the replica file's data", async () => {
    const { user, password } = world.chap;
    // Anyone else is refused, even with the volume's CHAP: the guest's own initiator name is not in the ACL.
    const [first] = world.replicas;
    const refused = await guest.exec(
      `iscsi_login ${world.replicaIqn} ${first.site.portal} ${user} ${password}; rc=$?
iscsiadm -m node -o delete -T ${world.replicaIqn} -p ${first.site.portal} -I default
exit $rc`,
      { timeoutMs: 60_000 },
    );
    expect(refused.code, refused.stdout + refused.stderr).to.not.equal(0);
    // tgtd answers "target not found", which open-iscsi reports as a login failure it will not retry.
    expect(refused.stderr, refused.stderr).to.match(/non-retryable/);

    const written = world.replicas.map((place) => {
      const data = randomBytes(MiB);
      place.node.run(["dd", `of=${place.file}`, "bs=1M", "conv=notrunc", "status=none"], data);
      return sha256(data);
    });
    const logins = world.replicas.map(
      ({ site }) =>
        `iscsi_login_as cstor-target ${targetInitiatorIqn(world.volume)} ${world.replicaIqn} ${site.portal} ${user} ${password} >/dev/null || exit 1`,
    );
    await guest.run(logins.join("\n"), { timeoutMs: 120_000 });
    expect(await readReplicas(world.replicas)).to.deep.equal(
      world.replicas.map(({ site }, i) => [site.portal, written[i]]),
    );
  });

  it("a pool site killed drops its session and its pod's readiness; restarted, the agent exports again and a login reads the replica", async () => {
    const [place] = world.replicas;
    const { portal } = place.site;
    const podReady = async () =>
      (
        await world.cluster.request(
          world.cluster.admin,
          "GET",
          `/api/v1/namespaces/${world.namespace}/pods/${place.site.podName}`,
        )
      ).body.status.conditions.find((c: any) => c.type === "Ready").status;
    await place.site.kill();
    expect(await podReady()).to.equal("False");
    // The session notices within its no-op timeout (2 + 2 s) and leaves LOGGED_IN.
    const state = await guest.run(
      `s=$(iscsi_session ${world.replicaIqn} ${portal}) || exit 1
for _ in $(seq 300); do read -r st <"$s/state"; [[ $st != LOGGED_IN ]] && break; gsleep 0.1; done
echo "$st"`,
      { timeoutMs: 60_000 },
    );
    expect(state.trim()).to.not.equal("LOGGED_IN");

    await place.site.restart();
    expect(await podReady()).to.equal("True");
    await place.site.exported(world.replicaIqn);
    // The restarted tgtd serves nothing until the agent's next pass: open-iscsi's reconnects in that window get
    // "target not found" and may end the session (state FREE) rather than retry, so the initiator logs in anew,
    // as the volume target does for a leg whose session is gone.
    const data = randomBytes(MiB);
    place.node.run(["dd", `of=${place.file}`, "bs=1M", "conv=notrunc", "status=none"], data);
    await guest.run(
      `iscsiadm -m node -T ${world.replicaIqn} -p ${portal} -I cstor-target --logout >/dev/null 2>&1
iscsiadm -m node -T ${world.replicaIqn} -p ${portal} -I cstor-target --login >/dev/null`,
      { timeoutMs: 60_000 },
    );
    expect(await readReplicas([place])).to.deep.equal([[portal, sha256(data)]]);
  });

  it("stops without leftovers: no process it started, no namespace, no object in the apiserver", async () => {
    const namespace = world.network.namespace;
    const cvrs = world.replicas.map((place) => place.cvr);
    const pods = world.replicas.map((place) => place.site.podName);
    await world.stop();
    // Every process the world started is this process's descendant; only the shared apiserver's and tsx's stay.
    const shared = /^(etcd|kube-apiserver|.*esbuild|ps)$/;
    const left = descendants(process.pid).filter((p) => !shared.test(p.comm));
    expect(left, "processes the world left running").to.deep.equal([]);
    expect(execFileSync("ip", ["netns", "list"], { encoding: "utf8" })).to.not.include(namespace);
    const get = async (path: string) =>
      (await world.cluster.request(world.cluster.admin, "GET", path)).status;
    for (const cvr of cvrs)
      expect(
        await get(`/apis/${API_VERSION}/namespaces/${world.namespace}/cstorvolumereplicas/${cvr}`),
      ).to.equal(404);
    for (const place of world.replicas)
      expect(
        await get(
          `/apis/${API_VERSION}/namespaces/${world.namespace}/cstorpoolinstances/${place.cspi.metadata.name}`,
        ),
      ).to.equal(404);
    for (const pod of pods)
      expect(await get(`/api/v1/namespaces/${world.namespace}/pods/${pod}`)).to.equal(404);
  });
});

/** The processes below `root` in the process tree (pid, command name, arguments). */
function descendants(root: number): { pid: number; comm: string; args: string }[] {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid=,comm=,args="], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => {
      const [pid, ppid, comm, ...args] = line.trim().split(/\s+/);
      return { pid: Number(pid), ppid: Number(ppid), comm, args: args.join(" ") };
    });
  const found: { pid: number; comm: string; args: string }[] = [];
  const parents = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const row of rows)
      if (parents.has(row.ppid) && !parents.has(row.pid)) {
        parents.add(row.pid);
        found.push({ pid: row.pid, comm: row.comm, args: row.args });
        grew = true;
      }
  }
  return found;
}
