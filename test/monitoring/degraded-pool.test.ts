// The headline of docs/operations.md#metrics-and-alerts: a mirror on a real zfs-fuse node of its own, driven
// from healthy to DEGRADED (a device file gone, as when a disk vanishes across a node restart) and back. At
// each stage the daemon's /metrics (served over HTTP by the daemon's own metrics server) passes
// `promtool check metrics` and says what happened, the CSPI's status.devices says the same, `kubectl cstor-pool
// describe pool` shows the device's state, and the series recorded from those scrapes make CStorPoolDegraded
// and CStorPoolDeviceFaulted fire, then stop, under `promtool test rules`. The daemon writes to the real
// apiserver (a namespace of the test's own), and describe reads the CSPI and its Events from there.
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { mkdirSync, renameSync } from "node:fs";
import { dirname, join } from "node:path";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { API_VERSION } from "../../api/constants.js";
import type { CSPI } from "../../api/types.js";
import { processIO } from "../../cli/input.js";
import { runDescribe } from "../../cli/views-command.js";
import { zpoolName } from "../../lib/names.js";
import { NodeDaemon } from "../../node-daemon/daemon.js";
import { commandsFromEnv } from "../../zfs/host.js";
import { createKubeApi, type KubeApi } from "../../node-daemon/kube.js";
import { metricsServer } from "../../node-daemon/main.js";
import { createMetrics } from "../../node-daemon/metrics.js";
import { cspiFor, requireZfs, ZfsSandbox } from "../../testkit/zfs.js";
import { daemonFor } from "../support/in-memory-daemon.js";
import { projectInstalled, type KubeCluster } from "../../testkit/kube.js";
import { testRules } from "../support/monitoring.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";

/** One scrape's samples by series (`name{labels}` as exposed); comments and histograms' buckets left out. */
function samples(exposition: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of exposition.split("\n")) {
    if (line === "" || line.startsWith("#") || !/^cstor_(pool|volume)_/.test(line)) continue;
    const cut = line.lastIndexOf(" ");
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

describe("monitoring: a real pool degraded and back, seen in metrics, status and alerts", function () {
  this.timeout(180_000);
  let sandbox: ZfsSandbox;
  let node: ZfsNode;
  let daemon: NodeDaemon;
  let server: Server;
  let cluster: KubeCluster;
  let kube: KubeApi;
  let namespace: string;

  before(async function () {
    requireZfs();
    sandbox = new ZfsSandbox();
    node = await startNode(`obs-${sandbox.id}`);
    cluster = await projectInstalled();
    namespace = `obs-${sandbox.id}`;
    await cluster.kubectl(["create", "namespace", namespace]);
    kube = createKubeApi(cluster.kubeConfig());
  });
  after(async () => {
    await daemon?.stop();
    server?.close();
    await node?.stop();
    sandbox?.cleanup();
  });

  it("reports ONLINE, then the missing device UNAVAIL and the pool DEGRADED, then ONLINE again; the alerts follow", async () => {
    const name = sandbox.name("obs");
    const pool = zpoolName(name);
    const [d1, d2] = [sandbox.file("d1", 64), sandbox.file("d2", 64)];
    // Made here with failmode=continue, so a missing device never blocks the node's zfs-fuse; the daemon adopts it.
    node.zpool(
      "create",
      "-o",
      "failmode=continue",
      "-O",
      "canmount=off",
      "-O",
      "compression=off",
      pool,
      "mirror",
      d1,
      d2,
    );
    const cspiPath = `/apis/${API_VERSION}/namespaces/${namespace}/cstorpoolinstances`;
    const created = await cluster.request(cluster.admin, "POST", cspiPath, {
      ...cspiFor(name, "node-a", [{ type: "mirror", devices: [d1, d2] }]),
      metadata: { name, namespace },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const stored = async (): Promise<CSPI> =>
      (await cluster.request(cluster.admin, "GET", `${cspiPath}/${name}`)).body as CSPI;
    /** What `kubectl cstor-pool describe pool` prints, and its row of the device (columns as in the header). */
    const described = async (blockDevice: string): Promise<{ text: string; device: string[] }> => {
      let text = "";
      let errors = "";
      const io = {
        ...processIO,
        stdout: (t: string) => void (text += t),
        stderr: (t: string) => void (errors += t),
      };
      const code = await runDescribe(
        ["pool", name, "-n", namespace, "--kubeconfig", cluster.admin.kubeconfig],
        io,
      );
      expect(code, errors).to.equal(0);
      const row = text.split("\n").find((line) => line.trim().startsWith(`${blockDevice} `));
      expect(row, text).to.not.equal(undefined);
      return { text, device: row!.trim().split(/\s{2,}/) };
    };
    const metrics = createMetrics();
    daemon = daemonFor(
      kube,
      "node-a",
      metrics,
      commandsFromEnv({ ZFS_COMMAND_PREFIX: node.commandPrefixEnv }),
      undefined,
      namespace,
    );
    server = metricsServer(metrics, () => true).listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
    await daemon.start();

    /** A pass over the pool's present state, then the daemon's /metrics, checked by promtool. */
    const scrape = async (): Promise<Map<string, number>> => {
      await daemon.resync();
      const body = await (await fetch(url)).text();
      const lint = spawnSync("promtool", ["check", "metrics"], { input: body, encoding: "utf8" });
      expect(
        `${lint.stdout}${lint.stderr}`,
        "promtool check metrics on the daemon's /metrics: no problem reported",
      ).to.equal("");
      expect(lint.status).to.equal(0);
      return samples(body);
    };
    const at = (labels: string) => `{cspi="${name}",pool="${pool}"${labels}}`;
    const device = (path: string, bd: string, state: string) =>
      `cstor_pool_device_state${at(`,device="${path}",blockdevice="${bd}",state="${state}"`)}`;

    const healthy = await scrape();
    expect(healthy.get(`cstor_pool_phase${at(',phase="ONLINE"')}`)).to.equal(1);
    expect(healthy.get(`cstor_pool_phase${at(',phase="DEGRADED"')}`)).to.equal(0);
    expect(healthy.get(device(d2, "bd-d2", "ONLINE"))).to.equal(1);
    expect(
      healthy.get(`cstor_pool_device_errors${at(`,device="${d2}",blockdevice="bd-d2",type="checksum"`)}`),
    ).to.equal(0);
    expect(healthy.get(`cstor_pool_size_bytes${at("")}`)).to.be.within(50 * 2 ** 20, 64 * 2 ** 20);
    expect(healthy.get(`cstor_pool_readonly_threshold_ratio${at("")}`)).to.equal(0.85);
    expect(healthy.get(`cstor_pool_last_observation_timestamp_seconds${at("")}`)).to.be.closeTo(
      Date.now() / 1000,
      120,
    );
    expect(
      (await stored()).status?.devices?.map((d) => [d.blockDeviceName, d.devLink, d.state]),
    ).to.deep.equal([
      ["bd-d1", d1, "ONLINE"],
      ["bd-d2", d2, "ONLINE"],
    ]);
    const healthyView = await described("bd-d2");
    expect(healthyView.text)
      .to.match(/^Phase: +ONLINE/m)
      .and.match(new RegExp(`^Pool: +${pool}$`, "m"));
    expect(healthyView.device.slice(0, 5), "DEVICE STATE READ WRITE CKSUM").to.deep.equal([
      "bd-d2",
      "ONLINE",
      "0",
      "0",
      "0",
    ]);
    expect(healthyView.device[6], "PATH").to.equal(d2);

    // The disk goes away while the node is down: at the next import ZFS cannot open it.
    // Out of the directory `zpool import -d` scans, or ZFS would find it there by its label.
    const away = join(sandbox.dir, "away", "d2");
    mkdirSync(dirname(away));
    node.zpool("export", pool);
    renameSync(d2, away);
    node.zpool("import", "-d", sandbox.dir, pool);
    const degraded = await scrape();
    expect(degraded.get(`cstor_pool_phase${at(',phase="DEGRADED"')}`)).to.equal(1);
    expect(degraded.get(`cstor_pool_phase${at(',phase="ONLINE"')}`)).to.equal(0);
    expect(
      degraded.get(device(d2, "bd-d2", "UNAVAIL")),
      "the missing member, by its former path and block device",
    ).to.equal(1);
    expect(degraded.get(device(d1, "bd-d1", "ONLINE"))).to.equal(1);
    const missing = (await stored()).status?.devices?.find((d) => d.blockDeviceName === "bd-d2");
    expect(missing).to.include({
      devLink: d2,
      path: d2,
      state: "UNAVAIL",
      section: "data",
      readErrors: 0,
      writeErrors: 0,
      checksumErrors: 0,
    });
    expect(missing?.note).to.contain(`was ${d2}`);
    expect((await stored()).status?.phase).to.equal("DEGRADED");
    const degradedView = await described("bd-d2");
    expect(degradedView.text).to.match(/^Phase: +DEGRADED/m);
    expect(degradedView.device.slice(0, 5)).to.deep.equal(["bd-d2", "UNAVAIL", "0", "0", "0"]);
    expect(degradedView.device.at(-1), "NOTE: where the device was").to.contain(`was ${d2}`);
    expect(degradedView.text, "the daemon's condition").to.match(
      /^ {2}DiskUnavailable +True +DiskFailed +\S+ +.*bd-d2/m,
    );
    expect(degradedView.text, "the daemon's Event, read from the apiserver").to.match(
      /^ {2}\S+ +Normal +FinalizerAdded +1 +cstor-pool-node-daemon +added finalizer openebs\.io\/pool-protection$/m,
    );
    expect((await described("bd-d1")).device.slice(0, 2), "the other side of the mirror").to.deep.equal([
      "bd-d1",
      "ONLINE",
    ]);

    // The disk is back: the pool opens it at the next import.
    node.zpool("export", pool);
    renameSync(away, d2);
    node.zpool("import", "-d", sandbox.dir, pool);
    const back = await scrape();
    expect(back.get(`cstor_pool_phase${at(',phase="ONLINE"')}`)).to.equal(1);
    expect(back.get(device(d2, "bd-d2", "UNAVAIL"))).to.equal(0);
    expect((await stored()).status?.devices?.every((d) => d.state === "ONLINE")).to.equal(true);
    const backView = await described("bd-d2");
    expect(backView.text).to.match(/^Phase: +ONLINE/m);
    expect(backView.device.slice(0, 2)).to.deep.equal(["bd-d2", "ONLINE"]);
    expect(backView.text).to.not.match(/DiskUnavailable +True/);

    // The three scrapes as a timeline, one sample a minute: 2 minutes healthy, 10 degraded, 10 back.
    const stages: [Map<string, number>, number][] = [
      [healthy, 2],
      [degraded, 10],
      [back, 10],
    ];
    const series = [...new Set(stages.flatMap(([s]) => [...s.keys()]))].map((key) => ({
      series: key,
      values: stages
        .map(([s, minutes]) =>
          Array.from({ length: minutes }, () => (s.has(key) ? String(s.get(key)) : "_")).join(" "),
        )
        .join(" "),
    }));
    const quiet = (minute: number) =>
      ["CStorPoolDegraded", "CStorPoolDeviceFaulted"].map((alertname) => ({
        eval_time: `${minute}m`,
        alertname,
        exp_alerts: [],
      }));
    const result = await testRules({
      evaluation_interval: "1m",
      tests: [
        {
          interval: "1m",
          input_series: series,
          alert_rule_test: [
            ...quiet(1),
            {
              eval_time: "10m",
              alertname: "CStorPoolDegraded",
              exp_alerts: [
                {
                  exp_labels: { severity: "warning", cspi: name, pool, phase: "DEGRADED" },
                  exp_annotations: {
                    summary: `Pool ${pool} (CSPI ${name}) is DEGRADED`,
                    description: `A device of the pool failed; its data has no redundancy left in that raid group. \`kubectl describe cspi ${name}\` shows the device (status.devices); replace it in the CSPC.`,
                  },
                },
              ],
            },
            {
              eval_time: "10m",
              alertname: "CStorPoolDeviceFaulted",
              exp_alerts: [
                {
                  exp_labels: {
                    severity: "warning",
                    cspi: name,
                    pool,
                    device: d2,
                    blockdevice: "bd-d2",
                    state: "UNAVAIL",
                  },
                  exp_annotations: {
                    summary: `Device ${d2} of pool ${pool} is UNAVAIL`,
                    description: `Block device bd-d2 of CSPI ${name} cannot be used by ZFS. Replace it in the CSPC (docs/operations.md).`,
                  },
                },
              ],
            },
            ...quiet(20),
          ],
        },
      ],
    });
    expect(result.code, result.output).to.equal(0);
  });
});
