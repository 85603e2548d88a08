// Settings read from the environment by more than one process: the hook server and the node daemon read the
// stale-heartbeat threshold under the same name, so one value configures both.
import { DEFAULTS } from "../api/constants.js";

/** A setting that cannot be used; the message names the variable and an example value. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** How long a node daemon's heartbeat (CSPI status.lastUpdateTime) stays fresh: the hooks' Unknown phase, the daemon's import handshake. */
export const STALE_STATUS_SECONDS_ENV = "CSPI_STALE_STATUS_SECONDS";

/** A whole number of seconds above 0 from the environment; unset or empty gives the fallback. */
export function wholeSeconds(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
  fallback: number,
): number {
  const value = env[name]?.trim();
  if (!value) return fallback;
  if (!/^[1-9][0-9]*$/.test(value)) {
    throw new ConfigError(
      `${name}=${JSON.stringify(value)} is not a whole number of seconds above 0: set e.g. ${name}=${fallback}`,
    );
  }
  return Number(value);
}

/** A TCP port from the environment; unset or empty gives the fallback. */
export function portNumber(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
  fallback: number,
): number {
  const text = env[name]?.trim();
  if (!text) return fallback;
  const value = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(value >= 1 && value <= 65535))
    throw new ConfigError(
      `${name}=${JSON.stringify(text)} is not a port number: set e.g. ${name}=${fallback}`,
    );
  return value;
}

/** Into the host's network namespace, where iscsid listens: what a pod without the host's network runs iscsiadm with. */
export const HOST_NETWORK_PREFIX: readonly string[] = ["nsenter", "--target", "1", "--net", "--"];

/**
 * A command prefix (e.g. nsenter into the host's namespaces) from the environment, as a JSON array of strings: no
 * shell word splitting. Unset or empty: no prefix.
 */
export function commandPrefix(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
  example: readonly string[],
): string[] {
  const text = env[name]?.trim();
  if (!text) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || !parsed.every((part) => typeof part === "string"))
    throw new ConfigError(
      `${name} must be a JSON array of strings, e.g. ${JSON.stringify(example)}; got ${text}`,
    );
  return parsed;
}

export function staleStatusSeconds(env: Readonly<Record<string, string | undefined>>): number {
  return wholeSeconds(env, STALE_STATUS_SECONDS_ENV, DEFAULTS.staleStatusSeconds);
}
