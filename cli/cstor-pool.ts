#!/usr/bin/env node
// cstor-pool: offline tools for people who review changes before applying them, views of the pools and
// volumes in a cluster, and the node daemon's local mode. Each subcommand lives in its own module and returns
// an exit code. Installed as `cstor-pool` and as the kubectl plugin `kubectl-cstor_pool` (`kubectl cstor-pool …`),
// the same file.
import { basename } from "node:path";
import { isEntryPoint } from "../runtime/entry.js";
import { packageVersion } from "../runtime/package-version.js";
import { runNodeDaemonCommand } from "../node-daemon/local.js";
import { didYouMean, EXIT, EXIT_CODES_HELP } from "./args.js";
import { runConvert } from "./convert.js";
import { runRender } from "./render.js";
import { runValidate } from "./validate.js";
import { runDescribe, runGet, runTree } from "./views-command.js";

const COMMANDS: Record<string, { run: (argv: string[]) => Promise<number>; summary: string }> = {
  validate: {
    run: (argv) => runValidate(argv),
    summary: "judge a CSPC (and an edit of it) offline, as the admission webhook would",
  },
  render: {
    run: (argv) => runRender(argv),
    summary: "print the CSPIs and BlockDeviceClaims the hooks would create",
  },
  convert: {
    run: (argv) => runConvert(argv),
    summary: "turn StoragePoolClaims or cstor.openebs.io/v1 CSPCs into CSPCs that adopt their pools",
  },
  get: {
    run: (argv) => runGet(argv),
    summary: "list pools or volumes from the cluster: node, health, capacity, replicas",
  },
  describe: {
    run: (argv) => runDescribe(argv),
    summary: "one pool: its raid groups' devices and claims, conditions, volumes, Events",
  },
  tree: {
    run: (argv) => runTree(argv),
    summary: "each CSPC with its pools, and their Deployments, claims and replicas",
  },
  "node-daemon": {
    run: (argv) => runNodeDaemonCommand(argv),
    summary: "plan (and apply) one CSPI against this machine's zpool",
  },
};

export function usage(program = "cstor-pool"): string {
  return [
    `Usage: ${program} <command> [options]`,
    "",
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`),
    "",
    `Run ${program} <command> --help for its options; ${program} --version for the version.`,
    EXIT_CODES_HELP,
  ].join("\n");
}

/** `kubectl cstor-pool` when kubectl started us as its plugin, so the help shows what to type. */
export function programName(started: string | undefined = process.argv[1]): string {
  return started && basename(started).startsWith("kubectl-") ? "kubectl cstor-pool" : "cstor-pool";
}

export async function main(argv: string[], program = "cstor-pool"): Promise<number> {
  const [name, ...rest] = argv;
  if (name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(usage(program) + "\n");
    return EXIT.ok;
  }
  if (name === "--version" || name === "version") {
    process.stdout.write(`${program} ${packageVersion()}\n`);
    return EXIT.ok;
  }
  if (!name) {
    process.stderr.write(`error: no command given\n\n${usage(program)}\n`);
    return EXIT.usage;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(
      `error: unknown command "${name}"${didYouMean(name, Object.keys(COMMANDS))}\n\n${usage(program)}\n`,
    );
    return EXIT.usage;
  }
  return command.run(rest);
}

if (isEntryPoint(import.meta.url)) {
  main(process.argv.slice(2), programName()).then(
    (code) => process.exit(code),
    (err: unknown) => {
      // A failure of the tool, not of the input: no usage text.
      process.stderr.write(`${programName()}: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(EXIT.refused);
    },
  );
}
