// The only way the node daemon runs a program: execFile with an argument array (never a shell), a timeout
// that sends SIGTERM and then SIGKILL, bounded output, and typed errors carrying what a user needs to act.
import { execFile, type ChildProcess, type ExecFileOptionsWithStringEncoding } from "node:child_process";

export interface CommandResult {
  argv: string[];
  stdout: string;
  stderr: string;
  durationMs: number;
}

export type CommandFailure = "exit" | "timeout" | "output-too-large" | "spawn";

/** A command that did not succeed. `kind` says why; exitCode and stderr say what the program said. */
export class CommandError extends Error {
  override readonly name = "CommandError";
  constructor(
    readonly argv: readonly string[],
    readonly kind: CommandFailure,
    readonly exitCode: number | null,
    readonly signal: string | null,
    readonly stdout: string,
    readonly stderr: string,
    readonly durationMs: number,
  ) {
    super(describeFailure(argv, kind, exitCode, signal, stderr));
  }

  get timedOut(): boolean {
    return this.kind === "timeout";
  }
}

function describeFailure(
  argv: readonly string[],
  kind: CommandFailure,
  exitCode: number | null,
  signal: string | null,
  stderr: string,
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
      return signal ? `${command} was killed by ${signal}${said}` : `${command} exited with ${exitCode}${said}`;
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

export type CommandListener = (result: { argv: readonly string[]; durationMs: number; error?: CommandError }) => void;

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
  if (!file) return Promise.reject(new CommandError(argv, "spawn", null, null, "", "empty command", 0));
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let timedOut = false;
    let killTimer: NodeJS.Timeout | undefined;
    // detached: its own process group, so a SIGTERM/SIGINT sent to the daemon's group (a terminal, a
    // container runtime) does not interrupt a zpool command half way; we stop it ourselves on timeout.
    // execFile passes `detached` on to spawn; its option type just does not list it.
    const execOptions = {
      maxBuffer: options.maxBuffer,
      encoding: "utf8",
      detached: true,
      env: { ...process.env, LC_ALL: "C" },
    } as ExecFileOptionsWithStringEncoding;
    const child: ChildProcess = execFile(file, args, execOptions, (error, stdout, stderr) => {
        clearTimeout(termTimer);
        clearTimeout(killTimer);
        const durationMs = performance.now() - started;
        const out = String(stdout ?? "");
        const err = String(stderr ?? "");
        if (!error) {
          resolve({ argv: [...argv], stdout: out, stderr: err, durationMs });
          return;
        }
        const code = (error as NodeJS.ErrnoException).code;
        const kind: CommandFailure = timedOut
          ? "timeout"
          : code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER"
            ? "output-too-large"
            : typeof code === "string"
              ? "spawn"
              : "exit";
        const exitCode = typeof code === "number" ? code : (child.exitCode ?? null);
        const signal = (error as { signal?: string | null }).signal ?? null;
        reject(new CommandError(argv, kind, exitCode, signal, out, kind === "spawn" ? `${err}${error.message}` : err, durationMs));
    });
    const signalGroup = (signal: NodeJS.Signals): void => {
      if (child.pid === undefined || child.exitCode !== null) return;
      try {
        process.kill(-child.pid, signal);
      } catch {
        child.kill(signal);
      }
    };
    const termTimer = setTimeout(() => {
      timedOut = true;
      signalGroup("SIGTERM");
      killTimer = setTimeout(() => signalGroup("SIGKILL"), options.killGraceMs);
    }, options.timeoutMs);
  });
}
