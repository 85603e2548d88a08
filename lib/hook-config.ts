// Hook server configuration, read from the environment once at startup (hooks/main.ts) and handed to the
// pure hook functions, so a hook's answer depends only on (request, clock, config).
import { DEFAULTS } from "../api/constants.js";
import { ConfigError, STALE_STATUS_SECONDS_ENV, wholeSeconds } from "./settings.js";
import { isDnsSubdomain } from "./names.js";
import { CHAP_KEY_ENV, CHAP_KEY_SECRET, CHAP_KEY_SECRET_KEY, chapKeyProblem } from "./volume/chap.js";

export { ConfigError };

export interface PoolPodConfig {
  /** The project's image with the pool agent as its entrypoint and tgt (Dockerfile target pool-agent). */
  poolImage: string;
  /** Secrets the kubelet uses to pull it; empty for public registries. */
  imagePullSecrets: string[];
  /** Host directory under which every pool gets its own directory (cachefile, sockets, cores). */
  baseDir: string;
}

export interface VolumeTargetConfig {
  /** The volume target (docs/adr/0011-a-replica-is-a-zvol-on-the-pool-data-reaches.md: logs in to the replicas, mirrors them, serves the LUN on 3260). */
  image: string;
  /** Secrets the kubelet uses to pull it; the same list as the pool pod's. */
  imagePullSecrets: string[];
  /**
   * The cluster's CHAP key (docs/adr/0040-the-target-agent-credentials-names-and-status.md), from which each
   * volume's credentials are derived. Without it no volume gets a target: the hooks never fall back to a
   * known password.
   */
  chapKey?: string;
}

export interface HookConfig {
  poolPod: PoolPodConfig;
  volumeTarget: VolumeTargetConfig;
  /** A CSPI whose node daemon heartbeat (status.lastUpdateTime) is older than this shows phase Unknown. */
  staleStatusSeconds: number;
  /** Upper bound on the resync period the hooks ask for, so time-based decisions are re-evaluated. */
  resyncSeconds: number;
}

export const DEFAULT_HOOK_CONFIG: HookConfig = {
  poolPod: {
    poolImage: "ghcr.io/cstor-pool-operator/cstor-pool-agent:0.1.0",
    imagePullSecrets: [],
    baseDir: "/var/openebs",
  },
  volumeTarget: {
    image: "ghcr.io/cstor-pool-operator/cstor-volume-target:0.1.0",
    imagePullSecrets: [],
  },
  staleStatusSeconds: DEFAULTS.staleStatusSeconds,
  resyncSeconds: DEFAULTS.resyncSeconds,
};

/** Environment variables, named as upstream cStor names them where it has a name for the setting. */
export const CONFIG_ENV = {
  poolImage: "OPENEBS_IO_CSTOR_POOL_IMAGE",
  targetImage: "OPENEBS_IO_CSTOR_TARGET_IMAGE",
  imagePullSecrets: "OPENEBS_IO_IMAGE_PULL_SECRETS",
  baseDir: "OPENEBS_IO_BASE_DIR",
  staleStatusSeconds: STALE_STATUS_SECONDS_ENV,
  resyncSeconds: "HOOK_RESYNC_SECONDS",
  chapKey: CHAP_KEY_ENV,
} as const;

/** Upstream's zrepl pool image, by repository name (any registry or mirror). */
const UPSTREAM_POOL_IMAGE = /(^|\/)cstor-pool(:|@|$)/;
/** The exporter side container's image, set by earlier releases' manifests. */
const REMOVED_EXPORTER_IMAGE_ENV = "OPENEBS_IO_CSTOR_POOL_EXPORTER_IMAGE";

/** The configuration from environment variables; unset or empty variables take the defaults. */
export function loadHookConfig(env: Readonly<Record<string, string | undefined>>): HookConfig {
  const text = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value ? value : undefined;
  };
  const seconds = (name: string, fallback: number): number => wholeSeconds(env, name, fallback);
  const image = (name: string, fallback: string): string => {
    const value = text(name) ?? fallback;
    if (/\s/.test(value))
      throw new ConfigError(
        `${name}=${JSON.stringify(value)} is not an image reference: it contains whitespace`,
      );
    return value;
  };

  // Left over from a release that ran upstream's pool image: fail at start, not with pools that never get ready.
  if (text(REMOVED_EXPORTER_IMAGE_ENV)) {
    throw new ConfigError(
      `${REMOVED_EXPORTER_IMAGE_ENV} is no longer used: the pool agent exports the pool's metrics itself; remove it from the hook server's environment`,
    );
  }
  const poolImage = image(CONFIG_ENV.poolImage, DEFAULT_HOOK_CONFIG.poolPod.poolImage);
  if (UPSTREAM_POOL_IMAGE.test(poolImage)) {
    throw new ConfigError(
      `${CONFIG_ENV.poolImage}=${JSON.stringify(poolImage)} is upstream's cStor pool image (zrepl): the pool Deployment runs the project's pool agent (docs/adr/0010-the-hosts-zfs-owns-the-pool-the-pool-pod-runs.md); set the image built from the Dockerfile's pool-agent target, or unset it`,
    );
  }

  const pullSecrets = (text(CONFIG_ENV.imagePullSecrets) ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const secret of pullSecrets) {
    if (!isDnsSubdomain(secret)) {
      throw new ConfigError(
        `${CONFIG_ENV.imagePullSecrets} names ${JSON.stringify(secret)}, which is not a Secret name: give a comma-separated list of Secret names`,
      );
    }
  }
  const baseDir = (text(CONFIG_ENV.baseDir) ?? DEFAULT_HOOK_CONFIG.poolPod.baseDir).replace(/(.)\/+$/, "$1");
  if (!baseDir.startsWith("/") || baseDir.split("/").includes("..")) {
    throw new ConfigError(
      `${CONFIG_ENV.baseDir}=${JSON.stringify(baseDir)} must be an absolute host path without "..", e.g. /var/openebs`,
    );
  }

  const imagePullSecrets = [...new Set(pullSecrets)].sort();
  const chapKey = chapKeyOf(env);
  return {
    poolPod: {
      poolImage,
      imagePullSecrets,
      baseDir,
    },
    volumeTarget: {
      image: image(CONFIG_ENV.targetImage, DEFAULT_HOOK_CONFIG.volumeTarget.image),
      imagePullSecrets,
      ...(chapKey !== undefined ? { chapKey } : {}),
    },
    staleStatusSeconds: seconds(CONFIG_ENV.staleStatusSeconds, DEFAULT_HOOK_CONFIG.staleStatusSeconds),
    resyncSeconds: seconds(CONFIG_ENV.resyncSeconds, DEFAULT_HOOK_CONFIG.resyncSeconds),
  };
}

/**
 * The CHAP key, or undefined when the variable is unset (the Secret is optional, so the server serves without
 * it and says so on every volume). A key that is set but unusable is a broken install: refused at start, not
 * reported one volume at a time.
 */
function chapKeyOf(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const value = env[CONFIG_ENV.chapKey];
  if (value === undefined) return undefined;
  const where = `the Secret ${CHAP_KEY_SECRET} (key ${JSON.stringify(CHAP_KEY_SECRET_KEY)})`;
  const fix = `replace ${where} as docs/install.md makes it, or delete the Secret to run without volume targets, then restart the hook server`;
  if (value.trim() === "") throw new ConfigError(`${CONFIG_ENV.chapKey} is set but empty: ${fix}`);
  const problem = chapKeyProblem(value);
  if (problem !== undefined) throw new ConfigError(`${problem}; ${fix}`);
  return value.trim();
}
