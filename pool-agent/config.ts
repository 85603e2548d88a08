// The pool agent's configuration, read once from its container's environment (set by the pool Deployment,
// lib/cspi/deployment.ts). A wrong value stops the agent at start with the variable and the fix named.
import { zpoolName } from "../lib/names.js";
import { CHAP_KEY_ENV, CHAP_KEY_SECRET, CHAP_KEY_SECRET_KEY, chapKeyProblem } from "../lib/volume/chap.js";
import { ConfigError, wholeSeconds } from "../lib/settings.js";
import { commandsFromEnv, type ZfsCommands } from "../zfs/host.js";

export interface AgentConfig {
  cspi: string;
  /** The zpool of the CSPI (lib/names.ts zpoolName). */
  pool: string;
  /** /readyz, /healthz and /metrics. */
  port: number;
  /** How often the pool is read and the exports reconciled. */
  pollIntervalMs: number;
  /** zpool and zfs as the node daemon runs them: the host's, through ZFS_COMMAND_PREFIX. */
  zfs: ZfsCommands;
  /** tgtadm talking to the pod's tgtd (its control port: the socket /var/run/tgtd/socket.<port>). */
  tgtadm: string[];
  /** The cluster's CHAP key: every export's password is derived from it (lib/volume/chap.ts); never logged. */
  chapKey: string;
}

export const AGENT_ENV = {
  cspi: "OPENEBS_IO_CSPI_NAME",
  pool: "OPENEBS_IO_ZPOOL_NAME",
  port: "PORT",
  pollSeconds: "POLL_INTERVAL_SECONDS",
  tgtControlPort: "TGT_CONTROL_PORT",
  chapKey: CHAP_KEY_ENV,
} as const;

export const AGENT_DEFAULTS = { port: 9500, pollSeconds: 10, tgtControlPort: 0 } as const;

export function loadAgentConfig(env: Readonly<Record<string, string | undefined>>): AgentConfig {
  const cspi = env[AGENT_ENV.cspi]?.trim() ?? "";
  if (!cspi) {
    throw new ConfigError(
      `${AGENT_ENV.cspi} is not set: the pool Deployment sets it to its CStorPoolInstance's name; run the agent from that Deployment or set it`,
    );
  }
  const pool = zpoolName(cspi);
  const named = env[AGENT_ENV.pool]?.trim();
  if (named && named !== pool) {
    throw new ConfigError(
      `${AGENT_ENV.pool}=${JSON.stringify(named)} is not the pool of CStorPoolInstance ${cspi} (${pool}): unset it or set it to ${pool}`,
    );
  }
  let zfs: ZfsCommands;
  try {
    zfs = commandsFromEnv(env);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  return {
    cspi,
    pool,
    port: port(env, LISTEN_PORT),
    pollIntervalMs: wholeSeconds(env, AGENT_ENV.pollSeconds, AGENT_DEFAULTS.pollSeconds) * 1000,
    zfs,
    tgtadm: ["tgtadm", "-C", String(port(env, TGT_CONTROL_PORT))],
    chapKey: chapKey(env),
  };
}

/**
 * Required, with no default: an export without its volume's password would admit anyone who knows the
 * initiator name, so an agent without a usable key stops before it serves anything.
 */
function chapKey(env: Readonly<Record<string, string | undefined>>): string {
  const key = env[AGENT_ENV.chapKey];
  const problem = chapKeyProblem(key);
  if (problem !== undefined) {
    throw new ConfigError(
      `${problem}. The pool agent serves no replica without it; its pool Deployment sets it from the Secret ${CHAP_KEY_SECRET} (key "${CHAP_KEY_SECRET_KEY}") of its namespace, which the installer makes (docs/install.md)`,
    );
  }
  return key!;
}

/** A port read from the environment: its variable, its default and the range it must be in. */
interface PortSetting {
  name: string;
  fallback: number;
  lowest: number;
  highest: number;
}

const LISTEN_PORT: PortSetting = {
  name: AGENT_ENV.port,
  fallback: AGENT_DEFAULTS.port,
  lowest: 1,
  highest: 65535,
};

// tgtd refuses control ports above 32767.
const TGT_CONTROL_PORT: PortSetting = {
  name: AGENT_ENV.tgtControlPort,
  fallback: AGENT_DEFAULTS.tgtControlPort,
  lowest: 0,
  highest: 32767,
};

function port(
  env: Readonly<Record<string, string | undefined>>,
  { name, fallback, lowest, highest }: PortSetting,
): number {
  const text = env[name]?.trim();
  if (!text) return fallback;
  const value = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(value >= lowest && value <= highest)) {
    throw new ConfigError(
      `${name}=${JSON.stringify(text)} is not a port number (${lowest}-${highest}): set e.g. ${name}=${fallback}`,
    );
  }
  return value;
}
