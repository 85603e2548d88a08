// The only way the node daemon runs a program: spawn with an argument array (never a shell), a timeout
// that sends SIGTERM and then SIGKILL, bounded output, and typed errors carrying what a user needs to act.
import { spawn, type ChildProcess } from "node:child_process";

export interface CommandResult {
  argv: string[];
  stdout: string;
  stderr: string;
  durationMs: number;
}

export type CommandFailure = "exit" | "timeout" | "output-too-large" | "spawn";

/** How a command failed: `kind` says why; exitCode and stderr say what the program said. */
export interface CommandOutcome {
  kind: CommandFailure;
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/** A command that did not succeed, with its outcome. */
export class CommandError extends Error {
  readonly kind: CommandFailure;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly durationMs: number;
  override readonly name = "CommandError";

  constructor(
    readonly argv: readonly string[],
    outcome: CommandOutcome,
  ) {
    super(describeFailure(argv, outcome));
    this.kind = outcome.kind;
    this.exitCode = outcome.exitCode;
    this.signal = outcome.signal;
    this.stdout = outcome.stdout;
    this.stderr = outcome.stderr;
    this.durationMs = outcome.durationMs;
  }

  get timedOut(): boolean {
    return this.kind === "timeout";
  }
}

function describeFailure(
  argv: readonly string[],
  { kind, exitCode, signal, stderr }: CommandOutcome,
): string {
  const command = argv.join(" ");
  const said = stderr.trim() ? `: ${lastLines(stderr, 4)}` : "";
  switch (kind) {
    case "timeout":
      return `${command} timed out and was stopped${said}`;
    case "output-too-large":
      return `${command} printed more output than allowed and was stopped`;
    case "spawn":
      return `${command} could not be started${said}`;
    case "exit":
      return signal
        ? `${command} was killed by ${signal}${said}`
        : `${command} exited with ${exitCode}${said}`;
  }
}

function lastLines(text: string, count: number): string {
  return text.trim().split("\n").slice(-count).join(" / ");
}

export interface RunOptions {
  /** After this, SIGTERM; default 60 s. */
  timeoutMs?: number;
  /** After SIGTERM, this long before SIGKILL; default 5 s. */
  killGraceMs?: number;
  /** Bytes of stdout or stderr kept before the command is stopped; default 16 MiB. */
  maxBuffer?: number;
}

export type CommandListener = (result: {
  argv: readonly string[];
  durationMs: number;
  error?: CommandError;
}) => void;

export interface Runner {
  run(argv: readonly string[], options?: RunOptions): Promise<CommandResult>;
  /** Resolves once no command is running: a stopping daemon lets the running zpool command finish. */
  idle(): Promise<void>;
}

const DEFAULTS = { timeoutMs: 60_000, killGraceMs: 5_000, maxBuffer: 16 * 1024 * 1024 };

export function createRunner(listener?: CommandListener): Runner {
  const running = new Set<Promise<unknown>>();
  return {
    run(argv, options = {}) {
      const promise = runOnce(argv, { ...DEFAULTS, ...options });
      running.add(promise);
      const settle = (): void => {
        running.delete(promise);
      };
      promise.then(
        (result) => {
          settle();
          listener?.({ argv, durationMs: result.durationMs });
        },
        (error: CommandError) => {
          settle();
          listener?.({ argv, durationMs: error.durationMs, error });
        },
      );
      return promise;
    },
    async idle() {
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}

function runOnce(argv: readonly string[], options: Required<RunOptions>): Promise<CommandResult> {
  const [file, ...args] = argv;
  if (!file) {
    const outcome: CommandOutcome = {
      kind: "spawn",
      exitCode: null,
      signal: null,
      stdout: "",
      stderr: "empty command",
      durationMs: 0,
    };
    return Promise.reject(new CommandError(argv, outcome));
  }
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let failure: CommandFailure | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    // spawn, not execFile: execFile does not pass `detached` on. Its own process group means a SIGTERM or
    // SIGINT sent to the daemon's group (a terminal, a container runtime) does not interrupt a zpool
    // command half way, and a timeout stops the whole group (nsenter/chroot and the zpool under it).
    // TZ=UTC: zpool prints a scrub's dates as local time without a zone; in UTC they are read exactly.
    const child: ChildProcess = spawn(file, args, {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LC_ALL: "C", TZ: "UTC" },
    });
    const signalGroup = (signal: NodeJS.Signals): void => {
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      try {
        process.kill(-child.pid, signal);
      } catch {
        child.kill(signal);
      }
    };
    const stop = (kind: CommandFailure): void => {
      if (failure) return;
      failure = kind;
      signalGroup("SIGTERM");
      killTimer = setTimeout(() => signalGroup("SIGKILL"), options.killGraceMs);
    };
    const collect = (chunks: Buffer[], add: (n: number) => number) => (chunk: Buffer) => {
      if (add(chunk.length) > options.maxBuffer) return stop("output-too-large");
      chunks.push(chunk);
    };
    child.stdout!.on(
      "data",
      collect(out, (n) => (outBytes += n)),
    );
    child.stderr!.on(
      "data",
      collect(err, (n) => (errBytes += n)),
    );
    const termTimer = setTimeout(() => stop("timeout"), options.timeoutMs);
    let spawnError: Error | undefined;
    child.on("error", (error) => {
      spawnError = error;
    });
    child.on("close", (code, signal) => {
      clearTimeout(termTimer);
      clearTimeout(killTimer);
      const durationMs = performance.now() - started;
      const stdout = Buffer.concat(out).toString("utf8");
      const stderr = Buffer.concat(err).toString("utf8");
      if (!failure && !spawnError && code === 0) {
        resolve({ argv: [...argv], stdout, stderr, durationMs });
        return;
      }
      reject(
        new CommandError(argv, {
          kind: failure ?? (spawnError ? "spawn" : "exit"),
          exitCode: code,
          signal,
          stdout,
          stderr: spawnError ? `${stderr}${spawnError.message}` : stderr,
          durationMs,
        }),
      );
    });
  });
}
