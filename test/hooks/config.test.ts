import { expect } from "chai";
import { ConfigError, DEFAULT_HOOK_CONFIG, loadHookConfig } from "../../lib/hook-config.js";

describe("hook server configuration from the environment", () => {
  it("takes the defaults when nothing is set, or a variable is empty", () => {
    expect(loadHookConfig({})).to.deep.equal(DEFAULT_HOOK_CONFIG);
    expect(loadHookConfig({ OPENEBS_IO_CSTOR_POOL_IMAGE: " ", CSPI_STALE_STATUS_SECONDS: "" })).to.deep.equal(
      DEFAULT_HOOK_CONFIG,
    );
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
      [
        { OPENEBS_IO_CSTOR_POOL_IMAGE: "openebs/cstor-pool :3.6.0" },
        'OPENEBS_IO_CSTOR_POOL_IMAGE="openebs/cstor-pool :3.6.0" is not an image reference: it contains whitespace',
      ],
    ];
    for (const [env, message] of refused)
      expect(() => loadHookConfig(env), JSON.stringify(env)).to.throw(ConfigError, message);
  });
});
