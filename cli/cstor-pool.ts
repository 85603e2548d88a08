#!/usr/bin/env node
// cstor-pool: offline tools for people who review changes before applying them, and the node daemon's
// local mode. Each subcommand lives in its own module and returns an exit code.
import { runNodeDaemonCommand } from "../node-daemon/local.js";
import { runRender } from "./render.js";
import { runValidate } from "./validate.js";

const COMMANDS: Record<string, { run: (argv: string[]) => Promise<number>; summary: string }> = {
  validate: { run: (argv) => runValidate(argv), summary: "judge a CSPC (and an edit of it) offline, as the admission webhook would" },
  render: { run: (argv) => runRender(argv), summary: "print the CSPIs and BlockDeviceClaims the hooks would create" },
  "node-daemon": { run: (argv) => runNodeDaemonCommand(argv), summary: "plan (and apply) one CSPI against this machine's zpool" },
};

export const USAGE = [
  "Usage: cstor-pool <command> [options]",
  "",
  ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`),
  "",
  "Run cstor-pool <command> --help for its options.",
].join("\n");

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h") {
    process.stdout.write(USAGE + "\n");
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`cstor-pool: unknown command "${name}"\n\n${USAGE}\n`);
    return 2;
  }
  return command.run(rest);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`cstor-pool: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
