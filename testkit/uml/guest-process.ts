// A long-running process inside a user-mode-linux guest, started the way a container runtime starts a
// container's process (docs/data-path-tests.md): an argument array, exactly the environment given, a working
// directory. testkit/uml/guest-run.sh starts it in the guest from a directory on the host's side of hostfs,
// where its output, its guest pid and, once it ends, its exit status appear for the test to read without a
// guest command. Signals go through the guest's command spool (bash's builtin kill, no fork).
//
// Startup in a guest is slow: node itself takes about a second, importing @kubernetes/client-node about 7 s.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT, waitUntil } from "../kube.js";
import type { UmlGuest } from "./guest.js";

const GUEST_RUN = join(REPO_ROOT, "testkit/uml/guest-run.sh");

/** Signals a test sends: the kubelet's stop (TERM) and a crash or a dead node (KILL). */
export type GuestSignal = "TERM" | "KILL";

export interface GuestProcessOptions {
  /** The program and its arguments (no shell). */
  argv: readonly string[];
  /** The whole environment, as a container's spec lists it: nothing of the guest's is inherited. */
  env: Readonly<Record<string, string>>;
  /** Working directory in the guest; default the repository (where `node --import tsx` finds tsx). */
  cwd?: string;
  /** Names the process in messages and its directory. */
  label: string;
  /** How long until it runs (its pid written); default 30 s. */
  startTimeoutMs?: number;
}

/** How it ended: the wait status as a container runtime reports it (128 + N after signal N). */
export interface GuestExit {
  code: number;
  /** KILL for 137, TERM for 143, ...; undefined for an exit of its own. */
  signal?: string;
}

const SIGNALS: Record<number, string> = { 1: "HUP", 2: "INT", 6: "ABRT", 9: "KILL", 11: "SEGV", 15: "TERM" };

/** Paths a guest script names unquoted must be plain: the test's own temp dirs and the repository are. */
function plainPath(path: string): string {
  if (!/^[\w./-]+$/.test(path))
    throw new Error(
      `path ${JSON.stringify(path)} has characters a guest script would have to quote: use a path of letters, digits, . _ - and /`,
    );
  return path;
}

const nulList = (items: readonly string[]) => items.map((item) => `${item}\0`).join("");
const readText = (path: string) => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
};

export class GuestProcess {
  /** stdout and stderr, on the host (the guest writes it through hostfs). */
  readonly logFile: string;

  private constructor(
    readonly guest: UmlGuest,
    readonly label: string,
    /** The process's pid in the guest (also its process group's id). */
    readonly pid: number,
    private readonly dir: string,
  ) {
    this.logFile = join(dir, "output.log");
  }

  /** Starts the process in `guest`; resolves once it runs, with its guest pid. */
  static async start(guest: UmlGuest, options: GuestProcessOptions): Promise<GuestProcess> {
    if (options.argv.length === 0)
      throw new Error(`guest process ${options.label}: argv is empty: give the program and its arguments`);
    const badEnv = Object.keys(options.env).find((name) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name));
    if (badEnv !== undefined)
      throw new Error(
        `guest process ${options.label}: env ${JSON.stringify(badEnv)} is not a variable name (letters, digits, _): rename it`,
      );
    const dir = plainPath(mkdtempSync(join(tmpdir(), `cstor-guest-${options.label.replace(/\W/g, "-")}-`)));
    writeFileSync(join(dir, "argv"), nulList(options.argv));
    writeFileSync(join(dir, "env"), nulList(Object.entries(options.env).map(([k, v]) => `${k}=${v}`)));
    writeFileSync(join(dir, "cwd"), nulList([options.cwd ?? REPO_ROOT]));
    // Its own process group, out of the spool command's (which timeout(1) would kill), output away from the spool.
    await guest.run(`set -m; bash ${plainPath(GUEST_RUN)} ${dir} </dev/null >/dev/null 2>&1 &`);
    let pid = 0;
    await waitUntil(
      async () => {
        const text = readText(join(dir, "pid"));
        if (text.endsWith("\n")) pid = Number(text.trim());
        return pid > 0;
      },
      options.startTimeoutMs ?? 30_000,
      () =>
        `guest process ${options.label} did not start in ${guest.name}: ${readText(join(dir, "output.log"))}`,
    );
    return new GuestProcess(guest, options.label, pid, dir);
  }

  /** Everything it printed so far. */
  output(): string {
    return readText(this.logFile);
  }

  /** The last lines of its output, for failure messages. */
  tail(lines = 30): string {
    const text = this.output().trimEnd().split("\n").slice(-lines).join("\n");
    return `\n--- ${this.label} in guest ${this.guest.name}, last ${lines} lines:\n${text}`;
  }

  /** Its exit, or undefined while it runs. */
  ended(): GuestExit | undefined {
    const text = readText(join(this.dir, "status"));
    if (!text.endsWith("\n")) return undefined;
    const code = Number(text.trim());
    return code > 128 ? { code, signal: SIGNALS[code - 128] ?? String(code - 128) } : { code };
  }

  /**
   * TERM goes to the process alone, as the runtime stops a container's main process; KILL to its whole
   * process group, as a container's processes all die with it.
   */
  async signal(name: GuestSignal): Promise<void> {
    if (this.ended()) return;
    const target = name === "KILL" ? `-${this.pid}` : String(this.pid);
    const result = await this.guest.exec(`kill -s ${name} -- ${target}`);
    // An exit between the check and the kill is no error.
    if (result.code !== 0 && !this.ended())
      throw new Error(`kill -s ${name} ${target} in ${this.guest.name}: ${result.stderr}${this.tail()}`);
  }

  /** Resolves with its exit once it has ended; throws after `timeoutMs`. */
  async exited(timeoutMs = 30_000): Promise<GuestExit> {
    let exit: GuestExit | undefined;
    await waitUntil(
      async () => (exit = this.ended()) !== undefined,
      timeoutMs,
      () => `${this.label} in guest ${this.guest.name} still runs after ${timeoutMs} ms${this.tail()}`,
    );
    return exit!;
  }

  /** Resolves once its output matches `pattern`; throws if it ends first or after `timeoutMs`. */
  async printed(pattern: RegExp, timeoutMs = 60_000): Promise<void> {
    await waitUntil(
      async () => {
        if (pattern.test(this.output())) return true;
        if (this.ended()) throw new Error(`${this.label} ended before printing ${pattern}${this.tail()}`);
        return false;
      },
      timeoutMs,
      () => `${this.label} did not print ${pattern} in ${timeoutMs} ms${this.tail()}`,
    );
  }

  /** As the kubelet stops a pod: TERM, then KILL after `graceMs`; resolves with the exit. */
  async stop(graceMs = 30_000): Promise<GuestExit> {
    await this.signal("TERM");
    const ended = await this.exited(graceMs).catch(() => undefined);
    if (ended) return ended;
    await this.signal("KILL");
    return this.exited(10_000);
  }

  /** Removes its directory (its output with it); call once it has ended, or the guest has stopped. */
  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
