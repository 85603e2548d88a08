// The CSI driver's node against what others wrote (docs/adr/0048-the-csi-node-reads-its-state-from-the-kernel.md):
// csi-sanity (kubernetes-csi/csi-test v5.6.0, built by scripts/csi-env.sh) runs its Node Service specs inside a
// user-mode Linux guest, the application's node, against the driver process as the node DaemonSet starts it
// (csi/main.ts --mode=node) on its unix socket there, so that staging really logs in with open-iscsi, makes a
// filesystem, mounts, publishes, expands and unstages in a real kernel. The volumes csi-sanity makes come from
// test/support/tgt-volume-controller.ts: tgtd on the test's network plays the controller and the target, because
// csi-sanity stages every volume with one set of secrets while the driver's controller gives each volume its own
// CHAP account (test/csi/controller.test.ts runs csi-sanity's controller specs against that controller).
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { identityService } from "../../csi/identity.js";
import { createCsiMetrics } from "../../csi/metrics.js";
import { CHAP_KEYS } from "../../csi/node/service.js";
import { startCsiServer, type CsiServer } from "../../csi/server.js";
import { createLogger } from "../../runtime/log.js";
import { judgeSanityRun, runCsiSanity, type SanityRun } from "../../testkit/csi-sanity.js";
import { UmlGuest } from "../../testkit/uml/guest.js";
import { compileForGuest, guestBuildDir, stepTimer } from "../../testkit/uml/guest-node.js";
import { GuestProcess } from "../../testkit/uml/guest-process.js";
import { NamespaceForwarder } from "../../testkit/uml/namespace-forwarder.js";
import { TestNetwork } from "../../testkit/uml/network.js";
import { TgtVolumeController } from "../support/tgt-volume-controller.js";
import { Tgtd } from "../support/tgtd.js";

const MiB = 1024 * 1024;
const NODE_NAME = "sanity-node";
/** Where csi-sanity's directories and the node's socket are in the guest: its own tmpfs, as a kubelet's. */
const GUEST_ROOT = "/run/csi-sanity";
/** The controller's port on the test network's bridge (the namespace's own: nothing else listens there). */
const CONTROLLER_PORT = 10000;

/** The specs of this run (--ginkgo.focus); the others are the controller's, run by test/csi/controller.test.ts. */
const FOCUS = "Node Service";
/** Node specs csi-sanity skips for a capability the node does not advertise, and why it does not. */
const CAPABILITY_SKIPS: Record<string, string> = {
  "Service does not have single node multi writer capability":
    "the node does not advertise SINGLE_NODE_MULTI_WRITER: the kubelet then stages a ReadWriteOncePod volume as SINGLE_NODE_WRITER, and the controller's publish keeps it to one node",
  "NodeGetVolumeHealth not supported": "the alpha volume health RPCs are not served",
  "NodeGetStorageHealth not supported": "the alpha storage health RPC is not served",
};

describe("csi: the node in user-mode Linux under csi-sanity's Node Service specs", function () {
  this.timeout(20 * 60_000);
  let dir: string;
  let buildDir: string;
  let network: TestNetwork | undefined;
  let guest: UmlGuest | undefined;
  let tgtd: Tgtd | undefined;
  let controller: CsiServer | undefined;
  let forwarder: NamespaceForwarder | undefined;
  let node: GuestProcess | undefined;
  const { timings, timed } = stepTimer();
  const chap = { user: "csi-sanity", password: randomBytes(16).toString("hex") };

  before(async function () {
    this.timeout(6 * 60_000);
    dir = mkdtempSync(join(tmpdir(), "cstor-csi-node-sanity-"));
    mkdirSync(join(dir, "volumes"));
    buildDir = guestBuildDir("csi-node-sanity");
    network = await TestNetwork.create();
    const [booted, started] = await Promise.all([
      timed("boot the guest", () => UmlGuest.boot(network!, { name: "node", index: 1, memory: "384M" })),
      timed("tgtd and the controller it plays", () => startController(network!)),
    ]);
    guest = booted;
    ({ tgtd, controller, forwarder } = started);
    const main = compileForGuest("csi/main.ts", buildDir);
    await guest.run(`mkdir -p ${GUEST_ROOT}`);
    node = await GuestProcess.start(guest, {
      label: "csi-node",
      argv: [process.execPath, main, "--mode=node", `--endpoint=unix://${GUEST_ROOT}/csi.sock`],
      env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", NODE_NAME, METRICS_PORT: "9505" },
    });
    await timed("the node driver serves", () => node!.printed(/CSI driver serving/, 120_000));
  });

  async function startController(net: TestNetwork) {
    const started = await Tgtd.startIn(net.prefix, `${net.hostAddress}:3260`);
    const volumes = new TgtVolumeController({ tgtd: started, dir: join(dir, "volumes"), chap });
    await volumes.start();
    const socket = join(dir, "controller.sock");
    const server = await startCsiServer({
      endpoint: `unix://${socket}`,
      services: {
        Identity: identityService({ version: "test", probe: async () => {} }),
        Controller: volumes.handlers(),
      },
      logger: createLogger({ level: "silent" }),
      metrics: createCsiMetrics(),
    });
    return {
      tgtd: started,
      controller: server,
      forwarder: await NamespaceForwarder.open(net, CONTROLLER_PORT, socket),
    };
  }

  after(async function () {
    this.timeout(3 * 60_000);
    await timed("stop the node driver", async () => node?.stop(10_000));
    await timed("stop the guest", async () => guest?.stop());
    await forwarder?.close();
    await controller?.stop(1_000);
    await tgtd?.stop();
    await network?.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(buildDir, { recursive: true, force: true });
    if (process.env.UML_TIMINGS) console.log(timings.map((t) => `    ${t}`).join("\n"));
  });

  it("passes every Node Service spec: stage logs in and mounts, publish, stats, expand, unstage; every skip named", async () => {
    const run: SanityRun = await timed("csi-sanity's node specs", () =>
      runCsiSanity({
        endpoint: `unix://${GUEST_ROOT}/csi.sock`,
        controllerEndpoint: `dns:///${forwarder!.address}`,
        dir,
        mountRoot: GUEST_ROOT,
        parameters: {},
        secrets: {
          NodeStageVolumeSecret: { [CHAP_KEYS.user]: chap.user, [CHAP_KEYS.password]: chap.password },
        },
        volumeBytes: 32 * MiB,
        expandBytes: 48 * MiB,
        focus: FOCUS,
        launch: async (argv) => {
          const sanity = await GuestProcess.start(guest!, {
            label: "csi-sanity",
            argv,
            env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", HOME: "/root" },
          });
          const ended = await sanity.exited(15 * 60_000);
          return { code: ended.code, output: sanity.output() };
        },
      }),
    );
    const nodeSpecs = { ...run, specs: run.specs.filter((s) => s.name.includes(FOCUS)) };
    const verdict = judgeSanityRun(
      nodeSpecs,
      (s) => CAPABILITY_SKIPS[s.message.replace(/^skipped - /, "")] !== undefined,
    );
    const context = `csi-sanity:\n${run.output.slice(-6000)}\n--- node driver:\n${node!.tail(60)}\n--- tgtd:\n${tgtd!.output()}`;
    expect(verdict.failed, context).to.deep.equal([]);
    expect(run.code, context).to.equal(0);
    expect(verdict.unexplained).to.deep.equal([]);
    process.stdout.write(`      csi-sanity node: ${JSON.stringify(verdict.summary)}\n`);
    expect(verdict.summary.passed).to.be.at.least(15);
  });
});
