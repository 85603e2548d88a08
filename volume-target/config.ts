// The target agent's configuration, read once from its container's environment (set by the target Deployment,
// lib/volume/children.ts). A wrong value stops the agent at start with the variable and the fix named.
import { createHash } from "node:crypto";
import {
  commandPrefix,
  ConfigError,
  HOST_NETWORK_PREFIX,
  portNumber,
  wholeSeconds,
} from "../lib/settings.js";
import { isDnsSubdomain } from "../lib/names.js";

export interface TargetConfig {
  volume: string;
  namespace: string;
  /** The node the pod runs on (status.target.node). */
  node: string;
  /** Where the LUN is served: the pod's address and the iSCSI port. */
  portal: string;
  /** /readyz, /healthz and /metrics. */
  port: number;
  /** CHAP of the volume (its Secret): the replica exports and the LUN's ACL both use it. */
  chap: { user: string; password: string };
  /** iscsiadm as the legs need it: in the host's network namespace (ADR 0040). */
  iscsiadm: string[];
  mdadm: string[];
  /** open-iscsi's replacement_timeout on every leg: how long I/O to a lost replica waits before md fails it. */
  legTimeoutSeconds: number;
  /** A full pass (API read, logins, md membership, status). */
  passIntervalMs: number;
  /** The consistency watch (legs in sync against the consistency factor, the LUN's write protection). */
  watchIntervalMs: number;
  /**
   * How long a leg stays logged out so that its pool agent reopens the grown replica in tgtd: longer than the
   * pool agent's poll interval (10 s by default) and its pass.
   */
  growthLogoutMs: number;
  /**
   * The most a snapshot holds the volume's writes (docs/adr/0050-a-snapshot-is-taken-while-md-holds-the-volumes-writes.md):
   * released then even if some replica's pool has not confirmed its snapshot.
   */
  snapshotHoldMs: number;
  /** Names of the agent's kernel objects, derived from the volume (short: md names hold 32 bytes). */
  names: { iface: string; array: string; backstore: string };
}

export const TARGET_ENV = {
  volume: "OPENEBS_IO_CSTOR_VOLUME",
  namespace: "NAMESPACE",
  node: "NODE_NAME",
  podIp: "POD_IP",
  port: "PORT",
  iscsiPort: "ISCSI_PORT",
  chapUser: "CHAP_USERNAME",
  chapPassword: "CHAP_PASSWORD",
  iscsiPrefix: "ISCSI_COMMAND_PREFIX",
  legTimeout: "LEG_REPLACEMENT_TIMEOUT_SECONDS",
  passSeconds: "PASS_INTERVAL_SECONDS",
  watchMs: "CONSISTENCY_WATCH_MS",
  growthLogoutSeconds: "GROWTH_LOGOUT_SECONDS",
  snapshotHoldSeconds: "SNAPSHOT_HOLD_SECONDS",
} as const;

export const TARGET_DEFAULTS = {
  port: 9500,
  iscsiPort: 3260,
  legTimeout: 5,
  passSeconds: 2,
  watchMs: 250,
  growthLogoutSeconds: 25,
  snapshotHoldSeconds: 5,
};

/**
 * A held write must complete well within the SCSI command timeout of the application's node (30 s by default),
 * or its initiator aborts it and the application sees an error, not a stall.
 */
export const MAX_SNAPSHOT_HOLD_SECONDS = 20;

type Env = Readonly<Record<string, string | undefined>>;

const required = (env: Env, name: string, fix: string): string => {
  const value = env[name]?.trim() ?? "";
  if (!value) throw new ConfigError(`${name} is not set: ${fix}`);
  return value;
};

export function loadTargetConfig(env: Env): TargetConfig {
  const fromDeployment = "the target Deployment sets it; run the agent from that Deployment or set it";
  const volume = required(env, TARGET_ENV.volume, fromDeployment);
  if (!isDnsSubdomain(volume))
    throw new ConfigError(`${TARGET_ENV.volume}=${JSON.stringify(volume)} is not a CStorVolume name`);
  const podIp = required(env, TARGET_ENV.podIp, `${fromDeployment} (from status.podIP)`);
  const secret = `it comes from the volume's Secret ${volume}-chap, which cvc-sync makes once the hook server has its CHAP key (docs/install.md)`;
  const hash = createHash("sha256").update(volume).digest("hex");
  return {
    volume,
    namespace: required(env, TARGET_ENV.namespace, fromDeployment),
    node: env[TARGET_ENV.node]?.trim() || "unknown",
    portal: `${podIp}:${portNumber(env, TARGET_ENV.iscsiPort, TARGET_DEFAULTS.iscsiPort)}`,
    port: portNumber(env, TARGET_ENV.port, TARGET_DEFAULTS.port),
    chap: {
      user: required(env, TARGET_ENV.chapUser, secret),
      password: required(env, TARGET_ENV.chapPassword, secret),
    },
    iscsiadm: [...commandPrefix(env, TARGET_ENV.iscsiPrefix, HOST_NETWORK_PREFIX), "iscsiadm"],
    mdadm: ["mdadm"],
    legTimeoutSeconds: wholeSeconds(env, TARGET_ENV.legTimeout, TARGET_DEFAULTS.legTimeout),
    passIntervalMs: wholeSeconds(env, TARGET_ENV.passSeconds, TARGET_DEFAULTS.passSeconds) * 1000,
    watchIntervalMs: milliseconds(env, TARGET_ENV.watchMs, TARGET_DEFAULTS.watchMs),
    growthLogoutMs:
      wholeSeconds(env, TARGET_ENV.growthLogoutSeconds, TARGET_DEFAULTS.growthLogoutSeconds) * 1000,
    snapshotHoldMs: snapshotHoldSeconds(env) * 1000,
    names: {
      iface: `cstor-${hash.slice(0, 12)}`,
      array: `cstor-${hash.slice(0, 16)}`,
      backstore: `cstor-${hash.slice(0, 16)}`,
    },
  };
}

function milliseconds(env: Env, name: string, fallback: number): number {
  const text = env[name]?.trim();
  if (!text) return fallback;
  if (!/^[1-9][0-9]{1,4}$/.test(text))
    throw new ConfigError(
      `${name}=${JSON.stringify(text)} is not a number of milliseconds (10-99999): set e.g. ${name}=${fallback}`,
    );
  return Number(text);
}

function snapshotHoldSeconds(env: Env): number {
  const name = TARGET_ENV.snapshotHoldSeconds;
  const seconds = wholeSeconds(env, name, TARGET_DEFAULTS.snapshotHoldSeconds);
  if (seconds > MAX_SNAPSHOT_HOLD_SECONDS)
    throw new ConfigError(
      `${name}=${seconds} holds a snapshot's writes longer than ${MAX_SNAPSHOT_HOLD_SECONDS} s, which the ` +
        `application's SCSI timeout (30 s by default) would abort: set at most ${name}=${MAX_SNAPSHOT_HOLD_SECONDS}`,
    );
  return seconds;
}
