// Local mode: `cstor-pool node-daemon --cspi-file cspi.yaml --once [--dry-run]`. Plans (and applies)
// one CSPI against this machine's zpool without a cluster, then prints the plan and the resulting status.
import { readFile } from "node:fs/promises";
import { parse } from "yaml";
import type { CSPI } from "../api/types.js";
import { canonicalYaml } from "../lib/canonical.js";
import { zpoolName } from "../lib/names.js";
import { createLogger } from "../runtime/log.js";
import { createRunner } from "../process/runner.js";
import { describeAction } from "./executor.js";
import { commandsFromEnv, inspectDevice, ZfsHost } from "../zfs/host.js";
import type { Plan } from "./planner.js";
import { reconcilePass, type PassResult } from "./reconcile.js";
import { deviceRootsFromEnv } from "./validate.js";

/**
 * Exit codes of local mode, documented in docs/node-daemon.md: a script can tell a pool that already matched
 * from one that was changed, and both from one the daemon would not touch.
 */
export const LOCAL_EXIT = {
  /** Nothing to do: the pool matches the CSPI. */
  converged: 0,
  /** An action or the observation failed, or the CSPI is invalid (InvalidSpec). */
  failed: 1,
  /** Usage error, unreadable file or DEVICE_ROOTS. */
  usage: 2,
  /** Actions were applied (with --dry-run: would be applied) and nothing is held. */
  changed: 3,
  /** Something is held (device missing or in use, CSPI and pool disagree, ...): printed on stderr. */
  held: 4,
} as const;

export interface LocalIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env?: NodeJS.ProcessEnv;
}

const USAGE = `usage: cstor-pool node-daemon --cspi-file <cspi.yaml> --once [--dry-run] [--node-name <name>]

Plans the CSPI against this machine's zpool/zfs and, without --dry-run, applies the plan; prints the plan
and the resulting CSPI status. The node name defaults to the CSPI's spec.hostName (this machine acts as
the CSPI's node). ZPOOL_BIN, ZFS_BIN and ZFS_COMMAND_PREFIX (a JSON array) select the ZFS commands;
DEVICE_ROOTS (a JSON array of directories, default ["/dev/"]) bounds the device paths it accepts.`;

interface LocalOptions {
  cspiFile: string;
  dryRun: boolean;
  nodeName?: string;
}

function parseArgs(argv: readonly string[]): LocalOptions | string {
  let cspiFile: string | undefined;
  let once = false;
  let dryRun = false;
  let nodeName: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--once") once = true;
    else if (arg === "--dry-run") dryRun = true;
    else if (arg === "--cspi-file" || arg === "--node-name") {
      const value = argv[++i];
      if (!value) return `${arg} needs a value`;
      if (arg === "--cspi-file") cspiFile = value;
      else nodeName = value;
    } else if (arg === "--help" || arg === "-h") return "";
    else return `unknown argument ${arg}`;
  }
  if (!cspiFile) return "--cspi-file is required";
  if (!once)
    return "--once is required: local mode reconciles once and exits (the watching daemon runs in the cluster)";
  return { cspiFile, dryRun, ...(nodeName ? { nodeName } : {}) };
}

export async function runNodeDaemonCommand(
  argv: string[],
  io: LocalIo = { stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t) },
): Promise<number> {
  const options = parseArgs(argv);
  if (options === "") {
    io.stdout(`${USAGE}\n`);
    return 0;
  }
  if (typeof options === "string") {
    io.stderr(`cstor-pool node-daemon: ${options}\n${USAGE}\n`);
    return 2;
  }
  let cspi: CSPI;
  try {
    cspi = parse(await readFile(options.cspiFile, "utf8")) as CSPI;
  } catch (error) {
    io.stderr(`cstor-pool node-daemon: cannot read ${options.cspiFile}: ${(error as Error).message}\n`);
    return 2;
  }
  if (!cspi || typeof cspi !== "object" || cspi.kind !== "CStorPoolInstance" || !cspi.spec) {
    io.stderr(
      `cstor-pool node-daemon: ${options.cspiFile} is not a CStorPoolInstance (kind: CStorPoolInstance with a spec)\n`,
    );
    return 2;
  }
  const env = io.env ?? process.env;
  let deviceRoots: string[];
  try {
    deviceRoots = deviceRootsFromEnv(env.DEVICE_ROOTS);
  } catch (error) {
    io.stderr(`cstor-pool node-daemon: ${(error as Error).message}\n`);
    return 2;
  }
  const nodeName = options.nodeName ?? cspi.spec.hostName;
  const host = new ZfsHost(createRunner(), commandsFromEnv(env));
  const result = await reconcilePass(cspi, {
    host,
    inspect: inspectDevice,
    nodeName,
    hostName: nodeName,
    deviceRoots,
    clock: () => new Date(),
    logger: createLogger({ level: "silent" }),
    dryRun: options.dryRun,
  });
  const planned = options.dryRun ? result.firstPlan : result.plan;
  const verdict = localOutcome(result, planned, options.dryRun);
  io.stdout(canonicalYaml(localReport(result, verdict.outcome, options.dryRun)));
  io.stderr(verdict.summary);
  return LOCAL_EXIT[verdict.outcome];
}

/** The YAML printed: the plan as first made, what was applied (not in a dry run), holds, status. */
function localReport(result: PassResult, outcome: Outcome, dryRun: boolean): Record<string, unknown> {
  const planned = dryRun ? result.firstPlan : result.plan;
  return {
    outcome,
    plan: result.firstPlan.actions.map((a) => ({
      action: a.kind,
      description: describeAction(a),
      detail: a,
    })),
    ...(dryRun
      ? {}
      : {
          applied: result.outcomes.map((o) => ({
            action: o.action.kind,
            ...(o.error ? { error: o.error } : { result: "done" }),
          })),
        }),
    holds: planned.holds,
    ...(result.observationError ? { observationError: result.observationError } : {}),
    ...(result.status && !dryRun ? { status: result.status } : {}),
  };
}

type Outcome = "converged" | "failed" | "changed" | "held";

/** What the pass came to, and the lines that say so on stderr (the YAML on stdout has the details). */
function localOutcome(
  result: PassResult,
  planned: Plan,
  dryRun: boolean,
): { outcome: Outcome; summary: string } {
  const holdLines = planned.holds.map((h) => `  ${h.reason}: ${h.message}\n`).join("");
  const failures = [
    ...result.outcomes.filter((o) => o.error).map((o) => `  ${o.action.kind}: ${o.error}\n`),
    ...(result.observationError !== undefined ? [`  observing the pool: ${result.observationError}\n`] : []),
  ];
  if (failures.length > 0 || planned.holds.some((h) => h.reason === "InvalidSpec")) {
    return { outcome: "failed", summary: `failed:\n${failures.join("")}${holdLines}` };
  }
  const done = dryRun
    ? result.firstPlan.actions.map(describeAction)
    : result.outcomes.map((o) => describeAction(o.action));
  if (planned.holds.length > 0) {
    const changes = `${done.length} change${done.length === 1 ? "" : "s"} (${done.join("; ")})`;
    const what =
      done.length === 0 ? "nothing done" : dryRun ? `${changes} would be made` : `after ${changes}`;
    return { outcome: "held", summary: `held: ${what}\n${holdLines}` };
  }
  if (done.length > 0)
    return { outcome: "changed", summary: `${dryRun ? "would change" : "changed"}: ${done.join("; ")}\n` };
  return {
    outcome: "converged",
    summary: `converged: pool ${zpoolName(result.cspi?.metadata.name ?? "")} matches the CStorPoolInstance, nothing to do\n`,
  };
}
