// zpool (or zfs) behind a wrapper script, configured as the node daemon's zpool binary (ZPOOL_BIN, or the
// commands of a ZfsHost): it runs the real command unless a fault is set for the subcommand. Faults: fail
// (exit 1 with an error), hang (never returns), garbage (random text, exit 0), truncated (the real output cut
// after its first lines, exit 0), done-then-hang (the real command runs, then the wrapper never returns:
// a daemon killed there has done the work without seeing it succeed), busy (zfs-fuse's "dataset is busy", exit 1)
// and busy-once (busy the first time only, then the real command).
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export type Fault = "fail" | "hang" | "garbage" | "truncated" | "done-then-hang" | "busy" | "busy-once";

export class FaultyCommand {
  readonly path: string;
  private readonly faultsFile: string;
  private readonly marks: string;
  /** Every invocation, one line each: the arguments, space-separated. */
  readonly logFile: string;
  /** The process name of a hanging wrapper, unique to this wrapper. */
  private readonly hangName = `faulty-hang-${randomBytes(4).toString("hex")}`;

  constructor(
    dir: string,
    readonly real: string,
  ) {
    const name = real.split("/").pop()!;
    this.path = join(dir, `faulty-${name}`);
    this.faultsFile = join(dir, `faulty-${name}.faults`);
    this.marks = join(dir, `faulty-${name}.marks`);
    this.logFile = join(dir, `faulty-${name}.log`);
    mkdirSync(this.marks, { recursive: true });
    writeFileSync(this.faultsFile, "");
    writeFileSync(this.logFile, "");
    writeFileSync(
      this.path,
      `#!/bin/bash
# Injected faults for tests (test/reliability/support/faulty-zpool.ts).
printf '%s\\n' "$*" >> ${quote(this.logFile)}
fault=$(awk -v c="$1" '$1 == c { print $2; exit }' ${quote(this.faultsFile)})
case "$fault" in
  fail) echo "cannot $1: I/O error (injected fault)" >&2; exit 1 ;;
  hang) touch ${quote(this.marks)}/"$1".started; exec -a ${this.hangName} sleep 600 ;;
  garbage) echo "?? $1 ¤ 0xDEADBEEF"; head -c 384 /dev/urandom | od -An -tx1; exit 0 ;;
  truncated) ${quote(real)} "$@" | head -n 3; exit 0 ;;
  done-then-hang) ${quote(real)} "$@"; touch ${quote(this.marks)}/"$1".done; exec -a ${this.hangName} sleep 600 ;;
  busy) echo "cannot $1 '\${@: -1}': dataset is busy" >&2; exit 1 ;;
  busy-once)
    if [ ! -e ${quote(this.marks)}/"$1".busy ]; then
      touch ${quote(this.marks)}/"$1".busy; echo "cannot $1 '\${@: -1}': dataset is busy" >&2; exit 1
    fi ;;
esac
exec ${quote(real)} "$@"
`,
    );
    chmodSync(this.path, 0o755);
  }

  set(subcommand: string, fault: Fault): void {
    writeFileSync(this.faultsFile, `${subcommand} ${fault}\n`);
    rmSync(this.marks, { recursive: true, force: true });
    mkdirSync(this.marks);
  }

  clear(): void {
    writeFileSync(this.faultsFile, "");
  }

  /** The hang of `hang` began, or the real command of `done-then-hang` finished. */
  reached(subcommand: string, fault: "hang" | "done-then-hang"): boolean {
    return existsSync(join(this.marks, `${subcommand}.${fault === "hang" ? "started" : "done"}`));
  }

  /** Wrapper processes still hanging (their sleep), so a test can show none is left behind or end them. */
  hanging(): number[] {
    try {
      return execFileSync("pgrep", ["-f", `^${this.hangName}`], { encoding: "utf8" })
        .split("\n")
        .filter(Boolean)
        .map(Number);
    } catch {
      return [];
    }
  }

  invocations(): string[] {
    return execFileSync("cat", [this.logFile], { encoding: "utf8" }).split("\n").filter(Boolean);
  }
}

function quote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
