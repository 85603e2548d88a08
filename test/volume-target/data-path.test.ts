// The volume target end to end (issue 32; docs/adr/0039-the-volume-target-md-raid1-served-by-lio.md and
// docs/adr/0040-the-target-agent-credentials-names-and-status.md), in real kernels: three real node daemons make a
// pool and a replica each on their own zfs-fuse nodes, three pool sites (tgtd and the pool agent, as the pool pod
// runs them) export those replicas with the volume's CHAP to the target's initiator name only, and the target
// agent (volume-target/main.ts, the process the target image starts) runs inside a user-mode-linux guest node
// under the shipped cstor-volume-target ServiceAccount. An application guest logs in to the LUN with the volume's
// client name and CHAP, makes a filesystem and writes; replicas die and return; the target's node dies and the
// target starts on another node. The world: testkit/target-world.ts; the harness: docs/data-path-tests.md.
// UML_TIMINGS=1 prints each step's duration.
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { ANNOTATION, API_VERSION, CSI } from "../../api/constants.js";
import type { CVTargetStatus } from "../../api/types.js";
import { clientInitiatorIqn, nodeInitiatorIqn, targetInitiatorIqn, volumeIqn } from "../../lib/volume/iqn.js";
import { waitUntil } from "../../testkit/kube.js";
import { runChecked } from "../../testkit/uml/network.js";
import { startTargetWorld, type TargetWorld } from "../../testkit/target-world.js";
import {
  createVolume,
  legChecksums,
  serviceAddress,
  startTargetAgent,
  targetStatus,
} from "../../testkit/target-volume.js";
import type { GuestProcess } from "../../testkit/uml/guest-process.js";
import { compileForGuest, guestBuildDir } from "../../testkit/uml/guest-node.js";
import type { UmlGuest } from "../../testkit/uml/guest.js";
import { shippedRules, testRules } from "../support/monitoring.js";

const MiB = 1024 * 1024;
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

describe("volume target: md RAID1 over three replicas, served by LIO, in user-mode Linux", function () {
  this.timeout(6 * 60_000);
  let world: TargetWorld;
  let app: UmlGuest;
  let target: GuestProcess | undefined;
  let targetNode: UmlGuest;
  let dir: string;
  let service: string;
  /** The agent, transpiled on the host: tsx takes 10-40 s to start in a guest, plain node a few. */
  let agentMain: string;
  let buildDir: string;
  let arrayUUID: string;
  const timings: string[] = [];
  const written: { name: string; sum: string }[] = [];
  const scrapes: Map<string, number>[] = [];
  const timed = async <T>(what: string, step: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    const result = await step();
    timings.push(`${what}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return result;
  };
  const cvTarget = () => targetStatus(world);
  const waitForTarget = async (what: string, done: (t: CVTargetStatus) => boolean, timeoutMs = 120_000) => {
    let last: CVTargetStatus | undefined;
    await waitUntil(
      async () => {
        last = await cvTarget();
        return last !== undefined && done(last);
      },
      timeoutMs,
      () => `status.target never showed ${what}: ${JSON.stringify(last)}${target?.tail(40) ?? ""}`,
    );
    return last!;
  };
  /** The target's /metrics, from inside the test network, as Prometheus scrapes it. */
  // runChecked's default 10 s bound is too short here: CI saw a scrape time out while the target's guest was
  // busy failing a leg and resyncing (a user-mode kernel shares the host's two cores with the whole world).
  const scrape = async (): Promise<Map<string, number>> => {
    const text = await runChecked(
      world.network.prefix[0],
      [
        ...world.network.prefix.slice(1),
        process.execPath,
        "-e",
        `fetch("http://${service}:9500/metrics").then(r => r.text()).then(t => process.stdout.write(t))`,
      ],
      60_000,
    );
    const samples = new Map<string, number>();
    for (const line of text.split("\n")) {
      if (!line.startsWith("cstor_volume_target_")) continue;
      const cut = line.lastIndexOf(" ");
      samples.set(line.slice(0, cut), Number(line.slice(cut + 1)));
    }
    scrapes.push(samples);
    return samples;
  };
  const sample = (samples: Map<string, number>, name: string, labels = "") =>
    samples.get(
      `${name}{${labels ? `${labels},` : ""}volume="${world.volume}",namespace="${world.namespace}"}`,
    );

  const startTarget = async (node: UmlGuest): Promise<GuestProcess> => {
    const identity = await world.cluster.serviceAccount(world.namespace, "cstor-volume-target");
    targetNode = node;
    const started = await startTargetAgent(world, node, agentMain, identity);
    target = started;
    return started;
  };

  before(async function () {
    this.timeout(6 * 60_000);
    dir = mkdtempSync(join(tmpdir(), "cstor-target-e2e-"));
    buildDir = guestBuildDir("volume-target");
    agentMain = compileForGuest("volume-target/main.ts", buildDir);
    world = await timed("the world: apiserver, 3 nodes, pools, replicas, exports, 3 guests", () =>
      startTargetWorld({
        replicas: 3,
        capacity: "128Mi",
        guests: ["tgt-a", "app", "tgt-b"],
        // An application node keeps open-iscsi's long default: a target that moves must queue its I/O, not fail it.
        guestOptions: { app: { replacementTimeoutSeconds: 120 } },
      }),
    );
    app = world.guests.get("app")!;
    service = serviceAddress(world);
    await createVolume(world, "128Mi");
  });

  afterEach(function () {
    if (this.currentTest?.state !== "failed") return;
    console.log(target?.tail(80) ?? "(no target)");
    for (const guest of world?.guests.values() ?? []) console.log(guest.consoleTail(30));
  });

  after(async function () {
    this.timeout(3 * 60_000);
    await world?.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(buildDir, { recursive: true, force: true });
    if (process.env.UML_TIMINGS) console.log(timings.map((t) => `    ${t}`).join("\n"));
  });

  /** Writes `mib` MiB of random data into the application's filesystem, fsynced; records its checksum. */
  const write = async (name: string, mib: number) => {
    const data = randomBytes(mib * MiB);
    writeFileSync(join(dir, name), data);
    await timed(`write ${mib} MiB (${name})`, () =>
      app.run(`dd if=${join(dir, name)} of=fs/${name} bs=1M conv=fsync status=none`, { timeoutMs: 180_000 }),
    );
    written.push({ name, sum: sha256(data) });
  };
  /** Every file written so far reads back, from the device (the page cache dropped). */
  const readBack = async () => {
    const sums = await app.run(
      `echo 3 >/proc/sys/vm/drop_caches\n${written.map((w) => `sha256sum fs/${w.name}`).join("\n")}`,
      { timeoutMs: 180_000 },
    );
    expect(
      sums
        .trim()
        .split("\n")
        .map((line) => line.split(/\s+/)[0]),
    ).to.deep.equal(written.map((w) => w.sum));
  };

  it("assembles the replicas and serves one LUN that the application's node formats and writes", async () => {
    await startTarget(world.guests.get("tgt-a")!);
    const serving = await timed("target Serving (logins, create, LIO)", () =>
      waitForTarget("Serving", (t) => t.state === "Serving"),
    );
    expect(serving.node).to.equal("tgt-a");
    expect(serving.arrayUUID, "the array's UUID is recorded once it exists").to.be.a("string");
    arrayUUID = serving.arrayUUID!;
    expect(serving.replicas!.map((r) => r.state)).to.deep.equal(["InSync", "InSync", "InSync"]);
    const disk = (
      await timed("application login (client name, CHAP)", () =>
        app.run(
          `iscsi_login_as client ${clientInitiatorIqn(world.volume)} ${volumeIqn(world.volume)} ${service}:3260 ` +
            `${world.chap.user} ${world.chap.password} >/dev/null && iscsi_disk ${volumeIqn(world.volume)} 0 30`,
          { timeoutMs: 90_000 },
        ),
      )
    ).trim();
    expect(disk, "the data is at LUN 0, as the PV says").to.match(/^\/dev\/sd[a-z]+$/);
    await app.run(`mkfs.ext4 -q -F ${disk} && mkdir -p fs && mount ${disk} fs`, { timeoutMs: 120_000 });
    await write("data-0", 64);
    await readBack();
  });

  it("keeps writing with a replica down (degraded), turns read-only with two down, and loses nothing acknowledged", async () => {
    const healthy = await scrape();
    expect(sample(healthy, "cstor_volume_target_replicas", 'state="InSync"')).to.equal(3);
    await timed("kill replica 2's tgtd", () => world.replicas[2].site.kill());
    await write("data-1", 8);
    const degraded = await waitForTarget("a replica not in sync", (t) =>
      t.replicas!.some((r) => r.state !== "InSync"),
    );
    expect(degraded.state).to.equal("Serving");
    expect(sample(await scrape(), "cstor_volume_target_replicas", 'state="InSync"')).to.equal(2);

    // Acknowledged writes are on disk; the filesystem is set aside before writes are refused under it.
    await app.run("sync && umount fs");
    await timed("kill replica 1's tgtd", () => world.replicas[1].site.kill());
    const readOnly = await timed("LUN read-only", () =>
      waitForTarget("ReadOnly", (t) => t.state === "ReadOnly"),
    );
    expect(readOnly.message).to.match(/^read-only: 1 replica\(s\) in sync and writes need 2/);
    const lun = `$(iscsi_disk ${volumeIqn(world.volume)} 0 5)`;
    const refused = await app.exec(
      `dd if=/dev/zero of=${lun} bs=4k count=1 seek=1000 oflag=direct status=none`,
    );
    expect(refused.code, "a write while only one replica is in sync").to.not.equal(0);
    await app.run(`dd if=${lun} of=/dev/null bs=4k count=256 iflag=direct status=none`);
    expect(sample(await scrape(), "cstor_volume_target_write_protected")).to.equal(1);
  });

  it("catches both replicas up from the bitmap when they return, confirms a rebuilt one without a hand, and every leg holds the same data", async () => {
    // cvc-sync marks a replacement replica rebuilding; the agent alone may confirm it.
    const rebuilding = world.replicas[1].cvr;
    await world.cluster.request(
      world.cluster.admin,
      "PATCH",
      `/apis/${API_VERSION}/namespaces/${world.namespace}/cstorvolumereplicas/${rebuilding}`,
      { metadata: { annotations: { [ANNOTATION.rebuildingSince]: new Date().toISOString() } } },
      "application/merge-patch+json",
    );
    await timed("restart both tgtd", async () => {
      await world.replicas[1].site.restart();
      await world.replicas[2].site.restart();
    });
    const back = await timed("all replicas in sync again", () =>
      waitForTarget(
        "Serving with 3 in sync",
        (t) => t.state === "Serving" && t.replicas!.every((r) => r.state === "InSync"),
        300_000,
      ),
    );
    expect(back.replicas!.map((r) => r.state)).to.deep.equal(["InSync", "InSync", "InSync"]);
    await waitUntil(
      async () => {
        const cvr = await world.cluster.request(
          world.cluster.admin,
          "GET",
          `/apis/${API_VERSION}/namespaces/${world.namespace}/cstorvolumereplicas/${rebuilding}`,
        );
        return cvr.body.metadata.annotations?.[ANNOTATION.replicaCaughtUp] === "true";
      },
      60_000,
      () => `the agent never confirmed ${rebuilding} caught up${target?.tail(30)}`,
    );
    expect(sample(await scrape(), "cstor_volume_target_write_protected")).to.equal(0);
    const lun = `$(iscsi_disk ${volumeIqn(world.volume)} 0 5)`;
    await app.run(`mount ${lun} fs`, { timeoutMs: 60_000 });
    await readBack();
    await write("data-2", 4);
    // Each leg's data, read over its own session, past md's data offset: the same bytes on every replica. The
    // filesystem is unmounted first, so that no journal commit lands between the reads of two legs.
    await app.run("umount fs", { timeoutMs: 60_000 });
    const { text: legs, sums } = await legChecksums(targetNode);
    expect(sums, legs).to.have.length(3);
    expect(new Set(sums).size, `every leg's data equal:\n${legs}`).to.equal(1);
    await app.run(`mount ${lun} fs`, { timeoutMs: 60_000 });
  });

  it("fires the volume's alerts from what the target exported: degraded with one replica down, read-only with two", async () => {
    const [healthy, degraded, readOnly] = scrapes;
    const names = ['cstor_volume_target_replicas{state="Offline"}', "cstor_volume_target_write_protected"];
    const labels = `volume="${world.volume}",namespace="${world.namespace}"`;
    const at = (s: Map<string, number>, series: string) =>
      s.get(series.includes("{") ? series.replace("}", `,${labels}}`) : `${series}{${labels}}`) ?? 0;
    // Five minutes of each stage: healthy, one replica down, two down (read-only).
    const input_series = names.map((series) => ({
      series: series.includes("{") ? series.replace("}", `,${labels}}`) : `${series}{${labels}}`,
      values: [healthy, degraded, readOnly].map((s) => `${at(s, series)}x4`).join(" "),
    }));
    const rule = (name: string) => shippedRules().alerts.find((a) => a.alert === name)!;
    const expanded = (name: string, value: number, state?: string) => {
      const fill = (text: string) =>
        text
          .replaceAll("{{ $labels.namespace }}", world.namespace)
          .replaceAll("{{ $labels.volume }}", world.volume)
          .replaceAll("{{ $labels.state }}", state ?? "")
          .replaceAll("{{ $value }}", String(value));
      const { annotations, labels: ruleLabels } = rule(name) as unknown as {
        annotations: Record<string, string>;
        labels: Record<string, string>;
      };
      return {
        exp_labels: {
          ...ruleLabels,
          volume: world.volume,
          namespace: world.namespace,
          ...(state ? { state } : {}),
        },
        exp_annotations: Object.fromEntries(Object.entries(annotations).map(([k, v]) => [k, fill(v)])),
      };
    };
    expect(at(degraded, names[0]), "the degraded scrape shows one replica Offline").to.equal(1);
    const result = await testRules({
      evaluation_interval: "1m",
      tests: [
        {
          interval: "1m",
          input_series,
          alert_rule_test: [
            { eval_time: "4m", alertname: "CStorVolumeReplicaDegraded", exp_alerts: [] },
            {
              eval_time: "8m",
              alertname: "CStorVolumeReplicaDegraded",
              exp_alerts: [expanded("CStorVolumeReplicaDegraded", 1, "Offline")],
            },
            { eval_time: "8m", alertname: "CStorVolumeReadOnly", exp_alerts: [] },
            {
              eval_time: "12m",
              alertname: "CStorVolumeReadOnly",
              exp_alerts: [expanded("CStorVolumeReadOnly", 1)],
            },
          ],
        },
      ],
    });
    expect(result.code, result.output).to.equal(0);
  });

  it("starts on another node after its node dies and serves the same data", async () => {
    await timed("the target's node dies (the UML kernel SIGKILLed)", () => targetNode.crash());
    await startTarget(world.guests.get("tgt-b")!);
    const moved = await timed("target Serving on tgt-b", () =>
      waitForTarget("Serving on tgt-b", (t) => t.state === "Serving" && t.node === "tgt-b", 180_000),
    );
    expect(moved.arrayUUID, "assembled, not created").to.equal(arrayUUID);
    // Assembled from the freshest legs; a leg the crash left behind is caught up from the bitmap.
    await timed("every replica in sync on tgt-b", () =>
      waitForTarget(
        "3 in sync on tgt-b",
        (t) => t.node === "tgt-b" && t.replicas!.every((r) => r.state === "InSync"),
      ),
    );
    // The Service's address moved, as kube-proxy moves a ClusterIP's endpoint: the session logs in again by itself.
    await app.run("ip neigh flush all");
    await timed("read everything back through the new target", () => readBack());
    await write("data-3", 4);
    await readBack();
  });

  it("admits only the node the CStorVolume is published to, and ends its session when the volume moves on", async () => {
    const iqn = volumeIqn(world.volume);
    const publish = async (node: string | null) => {
      const path = `/apis/${API_VERSION}/namespaces/${world.namespace}/cstorvolumes/${world.volume}`;
      const body = { metadata: { annotations: { [CSI.publishedNodeAnnotation]: node } } };
      const response = await world.cluster.request(
        world.cluster.admin,
        "PATCH",
        path,
        body,
        "application/merge-patch+json",
      );
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
    };
    const admitting = (initiator: string) =>
      waitForTarget(`the LUN admitting ${initiator} alone`, (t) => t.initiators?.join() === initiator);
    const login = (iface: string, initiator: string) =>
      app.exec(
        `iscsi_login_as ${iface} ${initiator} ${iqn} ${service}:3260 ${world.chap.user} ${world.chap.password}`,
        {
          timeoutMs: 60_000,
        },
      );
    await app.run("umount fs && iscsiadm -m session -u >/dev/null", { timeoutMs: 60_000 });

    await publish("app-node");
    await timed("the LUN's ACL follows the record", () => admitting(nodeInitiatorIqn("app-node")));
    const client = await login("client", clientInitiatorIqn(world.volume));
    expect(client.code, `the client name is refused once the volume is published: ${client.stderr}`).to.equal(
      24,
    );
    const node = await login("csi", nodeInitiatorIqn("app-node"));
    expect(node.code, node.stderr).to.equal(0);
    await app.run(`mount $(iscsi_disk ${iqn} 0 30) fs`, { timeoutMs: 60_000 });
    await readBack();
    await app.run("umount fs");

    // Published elsewhere (ControllerUnpublish here, then Publish there): LIO drops this node's ACL and session.
    await publish("other-node");
    await timed("the LUN's ACL moves to the other node", () => admitting(nodeInitiatorIqn("other-node")));
    await waitUntil(
      async () =>
        (await app.run(`cat $(iscsi_session ${iqn})/state 2>/dev/null || echo gone`)).trim() !== "LOGGED_IN",
      60_000,
      () => "the first node's session to the LUN stayed logged in after the volume moved to another node",
    );
    const again = await login("csi", nodeInitiatorIqn("app-node"));
    expect(again.code, "the first node cannot log in again").to.not.equal(0);
    await app.run("iscsiadm -m session -u >/dev/null 2>&1; true", { timeoutMs: 60_000 });

    // Without the record the volume is one made before the driver: its client name again, for what follows.
    await publish(null);
    await admitting(clientInitiatorIqn(world.volume));
    expect((await login("client", clientInitiatorIqn(world.volume))).code).to.equal(0);
    await app.run(`mount $(iscsi_disk ${iqn} 0 30) fs`, { timeoutMs: 60_000 });
    await readBack();
  });

  it("stops on SIGTERM: the LUN goes, the array stops, the legs log out", async () => {
    await app.run("umount fs && iscsiadm -m session -u >/dev/null", { timeoutMs: 60_000 });
    const ended = await timed("SIGTERM the target", () => target!.stop(60_000));
    expect(ended.code, target!.tail()).to.equal(0);
    const left = await targetNode.run(
      `grep '^md' /proc/mdstat; ls /sys/kernel/config/target/iscsi/ | grep -c ':' || true
for s in /sys/class/iscsi_session/session*; do [ -e "$s" ] && cat $s/targetname; done; true`,
    );
    expect(left.trim(), "no array, no LIO target, no session left").to.equal("0");
    expect((await cvTarget())?.state).to.equal("Stopped");
  });

  it("lets only the volume's target log in to a replica: a wrong CHAP secret and a foreign initiator are refused", async () => {
    const portal = world.replicas[0].site.portal;
    const attempt = (initiator: string, password: string) =>
      app.exec(
        `iscsi_login_as probe-${password.length} ${initiator} ${world.replicaIqn} ${portal} ${world.chap.user} ${password}`,
        { timeoutMs: 60_000 },
      );
    const wrongSecret = await attempt(targetInitiatorIqn(world.volume), "wrong-secret-0000");
    expect(wrongSecret.code, wrongSecret.stderr).to.equal(24);
    const foreign = await attempt(app.initiatorIqn, world.chap.password);
    expect(foreign.code, `${foreign.stdout}${foreign.stderr}`).to.not.equal(0);
  });
});
