import { spawn } from "node:child_process";
import { once } from "node:events";
import { expect } from "chai";
import { ConfigError, DEFAULT_HOOK_CONFIG, loadHookConfig } from "../../lib/hook-config.js";
import { freePorts, REPO_ROOT } from "../../testkit/kube.js";
import { onStop } from "../../testkit/processes.js";

const KEY = "4f1b6a0c9d2e8b7a5c3f1e0d9b8a7c6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b";
const SHORT_KEY_FIX =
  'CSTOR_REPLICA_CHAP_KEY is 12 characters long: it must have at least 32 (make it with: openssl rand -hex 32); replace the Secret cstor-replica-chap-key (key "key") as docs/install.md makes it, or delete the Secret to run without volume targets, then restart the hook server';

describe("hook server configuration from the environment", () => {
  it("takes the defaults when nothing is set, or a variable is empty", () => {
    expect(loadHookConfig({})).to.deep.equal(DEFAULT_HOOK_CONFIG);
    expect(loadHookConfig({ OPENEBS_IO_CSTOR_POOL_IMAGE: " ", CSPI_STALE_STATUS_SECONDS: "" })).to.deep.equal(
      DEFAULT_HOOK_CONFIG,
    );
    expect(DEFAULT_HOOK_CONFIG.volumeTarget, "no key: no volume gets a target").to.not.have.property(
      "chapKey",
    );
  });

  it("reads the cluster's CHAP key, as the Secret holds it less surrounding whitespace", () => {
    expect(loadHookConfig({ CSTOR_REPLICA_CHAP_KEY: `${KEY}\n` }).volumeTarget).to.deep.equal({
      ...DEFAULT_HOOK_CONFIG.volumeTarget,
      chapKey: KEY,
    });
  });

  it("reads images, pull secrets, the base directory and the time bounds", () => {
    const config = loadHookConfig({
      OPENEBS_IO_CSTOR_POOL_IMAGE: "registry.local/cstor-pool-agent:0.1.0",
      OPENEBS_IO_CSTOR_TARGET_IMAGE: "registry.local/cstor-volume-target:0.1.0",
      OPENEBS_IO_IMAGE_PULL_SECRETS: "regcred, mirror-cred,regcred",
      OPENEBS_IO_BASE_DIR: "/data/openebs/",
      CSPI_STALE_STATUS_SECONDS: "120",
      HOOK_RESYNC_SECONDS: "30",
    });
    expect(config).to.deep.equal({
      poolPod: {
        poolImage: "registry.local/cstor-pool-agent:0.1.0",
        imagePullSecrets: ["mirror-cred", "regcred"],
        baseDir: "/data/openebs",
      },
      volumeTarget: {
        image: "registry.local/cstor-volume-target:0.1.0",
        imagePullSecrets: ["mirror-cred", "regcred"],
      },
      staleStatusSeconds: 120,
      resyncSeconds: 30,
    });
  });

  it("refuses values it cannot use, naming the variable and an example", () => {
    const refused: [Record<string, string>, string][] = [
      [
        { CSPI_STALE_STATUS_SECONDS: "5m" },
        'CSPI_STALE_STATUS_SECONDS="5m" is not a whole number of seconds above 0: set e.g. CSPI_STALE_STATUS_SECONDS=300',
      ],
      [
        { HOOK_RESYNC_SECONDS: "0" },
        'HOOK_RESYNC_SECONDS="0" is not a whole number of seconds above 0: set e.g. HOOK_RESYNC_SECONDS=60',
      ],
      [
        { OPENEBS_IO_BASE_DIR: "var/openebs" },
        'OPENEBS_IO_BASE_DIR="var/openebs" must be an absolute host path without "..", e.g. /var/openebs',
      ],
      [
        { OPENEBS_IO_BASE_DIR: "/var/../etc" },
        'OPENEBS_IO_BASE_DIR="/var/../etc" must be an absolute host path without "..", e.g. /var/openebs',
      ],
      [
        { OPENEBS_IO_IMAGE_PULL_SECRETS: "Reg_Cred" },
        'OPENEBS_IO_IMAGE_PULL_SECRETS names "Reg_Cred", which is not a Secret name: give a comma-separated list of Secret names',
      ],
      [
        { OPENEBS_IO_CSTOR_POOL_IMAGE: "registry.local/openebs/cstor-pool:3.6.0" },
        "OPENEBS_IO_CSTOR_POOL_IMAGE=\"registry.local/openebs/cstor-pool:3.6.0\" is upstream's cStor pool image (zrepl): the pool Deployment runs the project's pool agent (docs/adr/0010-the-hosts-zfs-owns-the-pool-the-pool-pod-runs.md); set the image built from the Dockerfile's pool-agent target, or unset it",
      ],
      [
        { OPENEBS_IO_CSTOR_POOL_EXPORTER_IMAGE: "openebs/m-exporter:3.6.0" },
        "OPENEBS_IO_CSTOR_POOL_EXPORTER_IMAGE is no longer used: the pool agent exports the pool's metrics itself; remove it from the hook server's environment",
      ],
      [{ CSTOR_REPLICA_CHAP_KEY: "0123456789ab" }, SHORT_KEY_FIX],
      [
        { CSTOR_REPLICA_CHAP_KEY: " \n" },
        'CSTOR_REPLICA_CHAP_KEY is set but empty: replace the Secret cstor-replica-chap-key (key "key") as docs/install.md makes it, or delete the Secret to run without volume targets, then restart the hook server',
      ],
      [
        { OPENEBS_IO_CSTOR_POOL_IMAGE: "openebs/cstor-pool :3.6.0" },
        'OPENEBS_IO_CSTOR_POOL_IMAGE="openebs/cstor-pool :3.6.0" is not an image reference: it contains whitespace',
      ],
    ];
    for (const [env, message] of refused)
      expect(() => loadHookConfig(env), JSON.stringify(env)).to.throw(ConfigError, message);
  });
});

describe("hook server process (node hooks/main.ts) and its CHAP key", function () {
  this.timeout(60_000);

  /** Starts the server with `key` (or without the variable); resolves when it listens or exits, with its output. */
  async function start(
    key: string | undefined,
  ): Promise<{ listening: boolean; code: number | null; output: string }> {
    const [port] = await freePorts(1);
    const env: Record<string, string | undefined> = {
      ...process.env,
      PORT: String(port),
      CSTOR_REPLICA_CHAP_KEY: key,
    };
    if (key === undefined) delete env.CSTOR_REPLICA_CHAP_KEY;
    const child = spawn(process.execPath, ["--import", "tsx", "hooks/main.ts"], {
      cwd: REPO_ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    onStop(async () => void child.kill("SIGKILL"));
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    const exited = once(child, "exit").then(([code]) => code as number | null);
    for (let i = 0; i < 600 && !output.includes("hook server listening"); i++) {
      const done = await Promise.race([exited, new Promise((r) => setTimeout(() => r("waiting"), 50))]);
      if (done !== "waiting") return { listening: false, code: done as number | null, output };
    }
    child.kill("SIGTERM");
    return { listening: output.includes("hook server listening"), code: await exited, output };
  }

  it("serves without a key (npm start on a fresh checkout): the Secret is optional", async () => {
    const { listening, output } = await start(undefined);
    expect(listening, output).to.equal(true);
  });

  it("refuses to start with a key it cannot use, saying how to fix it, and never serves with it", async () => {
    const { listening, code, output } = await start("0123456789ab");
    expect(listening, output).to.equal(false);
    expect(code).to.equal(1);
    const line = output
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; error?: string })
      .find((l) => l.msg === "hook server failed to start");
    expect(line?.error, output).to.equal(SHORT_KEY_FIX);
  });
});
