// The driver's configuration: flags first (as the sidecar manifests write them), then the environment, checked
// once at start. A wrong value stops the driver with the flag or variable and the fix named.
import {
  commandPrefix,
  ConfigError,
  HOST_NETWORK_PREFIX,
  portNumber,
  wholeSeconds,
} from "../lib/settings.js";

export const CSI_MODES = ["controller", "node"] as const;
export type CsiMode = (typeof CSI_MODES)[number];

export interface CsiConfig {
  mode: CsiMode;
  /** The unix socket the sidecars dial: unix:///csi/csi.sock. */
  endpoint: string;
  /** /healthz and /metrics. Not 9500: the node daemon has that port on every node. */
  metricsPort: number;
  /** The namespace of the pools and the volumes' CStorVolumeConfigs (the install's). */
  namespace: string;
  /** The Kubernetes Node the node mode serves: its node id. */
  nodeName: string | undefined;
  /** How long SIGTERM lets running calls finish. */
  drainMs: number;
  /** The node's iscsiadm: ISCSI_COMMAND_PREFIX (the host's network namespace, where iscsid listens) and iscsiadm. */
  iscsiadm: string[];
}

export const CSI_ENV = {
  mode: "CSI_MODE",
  endpoint: "CSI_ENDPOINT",
  metricsPort: "METRICS_PORT",
  namespace: "NAMESPACE",
  nodeName: "NODE_NAME",
  drainSeconds: "DRAIN_SECONDS",
  iscsiPrefix: "ISCSI_COMMAND_PREFIX",
} as const;

export const CSI_DEFAULTS = {
  endpoint: "unix:///csi/csi.sock",
  metricsPort: 9505,
  namespace: "openebs",
  drainSeconds: 30,
};

type Env = Readonly<Record<string, string | undefined>>;

/** `--name=value` flags; anything else is refused, so a misspelt flag is not silently ignored. */
function flags(argv: readonly string[]): Map<string, string> {
  const known = new Set(["mode", "endpoint"]);
  const parsed = new Map<string, string>();
  for (const arg of argv) {
    const match = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (!match || !known.has(match[1]))
      throw new ConfigError(
        `unknown argument ${JSON.stringify(arg)}: the driver takes --mode=controller|node and --endpoint=unix:///<socket>`,
      );
    parsed.set(match[1], match[2]);
  }
  return parsed;
}

export function loadCsiConfig(argv: readonly string[], env: Env): CsiConfig {
  const given = flags(argv);
  const mode = given.get("mode") ?? env[CSI_ENV.mode]?.trim() ?? "";
  if (!(CSI_MODES as readonly string[]).includes(mode))
    throw new ConfigError(
      `the mode is ${JSON.stringify(mode)}: start the driver with --mode=controller (the controller Deployment) or --mode=node (the node DaemonSet), or set ${CSI_ENV.mode}`,
    );
  const nodeName = env[CSI_ENV.nodeName]?.trim() || undefined;
  if (mode === "node" && !nodeName)
    throw new ConfigError(
      `${CSI_ENV.nodeName} is not set: the node DaemonSet sets it from spec.nodeName; it is the node id`,
    );
  return {
    mode: mode as CsiMode,
    endpoint: given.get("endpoint") ?? (env[CSI_ENV.endpoint]?.trim() || CSI_DEFAULTS.endpoint),
    metricsPort: portNumber(env, CSI_ENV.metricsPort, CSI_DEFAULTS.metricsPort),
    namespace: env[CSI_ENV.namespace]?.trim() || CSI_DEFAULTS.namespace,
    nodeName,
    drainMs: wholeSeconds(env, CSI_ENV.drainSeconds, CSI_DEFAULTS.drainSeconds) * 1000,
    iscsiadm: [...commandPrefix(env, CSI_ENV.iscsiPrefix, HOST_NETWORK_PREFIX), "iscsiadm"],
  };
}
