// A long-running child process whose output is read as JSON log lines (ours from runtime/log.ts, Metacontroller's from
// zap), kept in memory for assertions and failure messages. Killed if the test process exits without stopping it.
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { waitUntil } from "./kube.js";
import { onStop } from "./processes.js";

const running = new Set<ChildProcess>();
process.once("exit", () => running.forEach((child) => child.kill("SIGKILL")));

/** One JSON log line; `level` is ours ("info", "warn", …) or zap's ("info", "error", "Level(-4)"). */
export interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

export interface ProcessEnding {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class LoggedProcess {
  readonly lines: LogLine[] = [];
  /** Output that is not a JSON log line (e.g. "node daemon failed: ..." on stderr, a Go panic). */
  readonly otherOutput: string[] = [];
  readonly exited: Promise<ProcessEnding>;
  private readonly child: ChildProcess;

  /** Spawns `file args` with exactly `env`; `label` names it in failure messages. */
  constructor(
    readonly label: string,
    file: string,
    args: readonly string[],
    options: { env: Record<string, string>; cwd?: string },
  ) {
    this.child = spawn(file, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] });
    running.add(this.child);
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => {
        running.delete(this.child);
        resolve({ code, signal });
      }),
    );
    this.child.on("error", (error) => this.otherOutput.push(`spawn failed: ${error.message}`));
    this.collect(this.child.stdout!);
    this.collect(this.child.stderr!);
    onStop(async () => void (await this.kill()));
  }

  ended(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** SIGTERM (as the kubelet stops a pod), SIGKILL after timeoutMs; resolves with how the process ended. */
  async stop(timeoutMs = 30_000): Promise<ProcessEnding> {
    if (!this.ended()) this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    const result = await this.exited;
    clearTimeout(timer);
    return result;
  }

  /** SIGKILL: a crash, or a node that dies. */
  async kill(): Promise<ProcessEnding> {
    if (!this.ended()) this.child.kill("SIGKILL");
    return this.exited;
  }

  /** How the process ended, or undefined while it still runs after timeoutMs. */
  async exitWithin(timeoutMs: number): Promise<ProcessEnding | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>(
      (resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)),
    );
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Resolves once the process logs `msg` (e.g. that it started); fails at once if it exits first. */
  async logged(msg: string, timeoutMs = 60_000): Promise<void> {
    await waitUntil(
      async () => {
        if (this.ended()) throw new Error(`${this.label} exited before logging "${msg}": ${this.tail()}`);
        return this.lines.some((l) => l.msg === msg);
      },
      timeoutMs,
      () => `${this.label} did not log "${msg}": ${this.tail()}`,
    );
  }

  /** The last lines of output, for failure messages. */
  tail(count = 20): string {
    const all = [...this.lines.map((l) => JSON.stringify(l)), ...this.otherOutput];
    return `\n--- ${this.label}, last ${count} lines:\n${all.slice(-count).join("\n")}`;
  }

  /** Everything it printed, one line each, to a file (kept for a person to read after the run). */
  writeLog(path: string): void {
    writeFileSync(path, [...this.lines.map((l) => JSON.stringify(l)), ...this.otherOutput].join("\n") + "\n");
  }

  private collect(stream: NodeJS.ReadableStream): void {
    let pending = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      pending += chunk;
      const parts = pending.split("\n");
      pending = parts.pop() ?? "";
      for (const text of parts) {
        if (!text.trim()) continue;
        try {
          this.lines.push(JSON.parse(text) as LogLine);
        } catch {
          this.otherOutput.push(text);
        }
      }
    });
  }
}
