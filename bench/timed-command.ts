// A command behind a wrapper that records when each invocation started and ended (epoch nanoseconds, from
// `date`) and its arguments, configured as the first element of a node daemon's ZFS_COMMAND_PREFIX: the
// end-to-end benchmark learns from it how long each zpool command took on each node. The wrapper's own cost
// (two `date` processes, a few milliseconds) counts as the command's, which makes the daemon look cheaper,
// never dearer.
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface TimedInvocation {
  startMs: number;
  endMs: number;
  /** The arguments after the wrapper, e.g. ["--mount=/proc/1/ns/mnt", "--", "zpool", "create", ...]. */
  args: string[];
}

export class TimedCommand {
  readonly path: string;
  private readonly logFile: string;

  constructor(dir: string, real: string) {
    const name = real.split("/").pop()!;
    this.path = join(dir, `timed-${name}`);
    this.logFile = join(dir, `timed-${name}.log`);
    writeFileSync(this.logFile, "");
    writeFileSync(
      this.path,
      `#!/bin/bash
# Times each invocation for the end-to-end benchmark (bench/timed-command.ts).
start=$(date +%s%N)
${quote(real)} "$@"
status=$?
printf '%s %s %s\\n' "$start" "$(date +%s%N)" "$*" >> ${quote(this.logFile)}
exit $status
`,
    );
    chmodSync(this.path, 0o755);
  }

  invocations(): TimedInvocation[] {
    return readFileSync(this.logFile, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => {
        const [start, end, ...args] = line.split(" ");
        return {
          startMs: Number(BigInt(start) / 1000n) / 1000,
          endMs: Number(BigInt(end) / 1000n) / 1000,
          args,
        };
      });
  }
}

function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
