// A user-mode-linux guest for the data-path tests (docs/data-path-tests.md): Debian's Linux 6.1 run as a host
// process, so that md, the iSCSI initiator and LIO, which this host's kernel lacks, run in a real kernel. One
// guest per test file, booted once and reused by its tests.
//
// The guest's root is the host's / (hostfs); its PID 1 is testkit/uml/guest-init.sh, which mounts tmpfs where
// daemons write, loads the modules, brings up the network and serves a command spool: exec() writes a script
// into the spool (as .tmp, then renamed), the guest runs it under timeout(1) and writes its output and exit
// code back. No tty, ssh or network is needed to drive it. Kernel messages go to `consoleLog`.
//
// The guest's network is a TAP device on the bridge of the test's own namespace (testkit/uml/network.ts), with
// the vector transport and gro=1 (without it reads from the network stall). LD_PRELOAD holds the FPU shim
// (testkit/uml/fpu-shim.c). scripts/uml-env.sh installs the packages and builds the cache this needs.
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { readFile, rename, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onStop } from "../processes.js";
import type { TestNetwork } from "./network.js";

const HERE = new URL(".", import.meta.url).pathname;
const GUEST_INIT = join(HERE, "guest-init.sh");
const GUEST_LIB = join(HERE, "guest-lib.sh");
const UML_ENV_SCRIPT = new URL("../../scripts/uml-env.sh", import.meta.url).pathname;

/** What scripts/uml-env.sh prepared: the kernel, the module root and the FPU shim. */
export interface UmlEnv {
  kernel: string;
  modroot: string;
  fpuShim: string;
}

let env: Promise<UmlEnv> | undefined;

/** Runs scripts/uml-env.sh once per process (installs what is missing; quick when cached) and reads its paths. */
export function umlEnv(): Promise<UmlEnv> {
  env ??= new Promise<UmlEnv>((resolve, reject) => {
    execFile(
      "bash",
      [UML_ENV_SCRIPT, "--print-env"],
      { timeout: 10 * 60_000, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`${UML_ENV_SCRIPT} failed: ${stderr || error.message}`));
        const vars = Object.fromEntries(
          stdout
            .split("\n")
            .filter((line) => line.includes("="))
            .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
        );
        resolve({ kernel: vars.UML_KERNEL, modroot: vars.UML_MODROOT, fpuShim: vars.UML_FPU_SHIM });
      },
    );
  });
  return env;
}

export interface GuestOptions {
  /** Short name: the hostname, part of the TAP device's and the initiator's names. */
  name: string;
  /** 1, 2, ...: the guest's address is network.guestAddress(index). */
  index: number;
  /** Guest RAM (mem=): 128M is enough for a storage guest, 256M gives the page cache room. */
  memory?: string;
  /** open-iscsi's replacement_timeout: how long I/O to a lost replica waits before it fails (md then drops it). */
  replacementTimeoutSeconds?: number;
  /** How long the boot may take until the spool answers. */
  bootTimeoutMs?: number;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  code: number;
}

const running = new Set<ChildProcess>();
// UML forks helper processes into its process group: kill the group, also when the test process dies first.
const killGroup = (child: ChildProcess) => {
  try {
    if (child.pid) process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
};
process.once("exit", () => running.forEach(killGroup));

export class UmlGuest {
  /** The guest's IPv4 address on the test network. */
  readonly address: string;
  /** The guest's iSCSI initiator name (what a target's ACL names). */
  readonly initiatorIqn: string;
  /** The kernel's console output. */
  readonly consoleLog: string;
  /** Milliseconds from exec of the kernel to the spool answering. */
  bootMs = 0;

  private readonly dir: string;
  private readonly spool: string;
  private child!: ChildProcess;
  private exited!: Promise<void>;
  private sequence = 0;

  private constructor(
    readonly name: string,
    private readonly network: TestNetwork,
    private readonly options: GuestOptions,
  ) {
    this.address = network.guestAddress(options.index);
    this.initiatorIqn = UmlGuest.initiatorIqn(network, name);
    this.dir = mkdtempSync(join(tmpdir(), `cstor-uml-${name}-`));
    this.spool = join(this.dir, "spool");
    this.consoleLog = join(this.dir, "console.log");
  }

  /** The initiator name guest `name` on `network` will have: targets can admit it before it boots. */
  static initiatorIqn(network: TestNetwork, name: string): string {
    return `iqn.2026-11.io.cstor-pool-operator.test:${network.namespace}.${name}`;
  }

  /** Boots a guest on `network`; resolves once its command spool answers. */
  static async boot(network: TestNetwork, options: GuestOptions): Promise<UmlGuest> {
    const uml = await umlEnv();
    const guest = new UmlGuest(options.name, network, options);
    onStop(() => guest.stop());
    try {
      await guest.start(uml);
    } catch (error) {
      await guest.stop();
      throw error;
    }
    return guest;
  }

  private async start(uml: UmlEnv): Promise<void> {
    for (const sub of ["spool/cmd", "spool/out", "scratch", "uml"])
      mkdirSync(join(this.dir, sub), { recursive: true });
    const tap = await this.network.addTap(`tap-${this.name}`);
    const mac = `02:00:0a:c8:${hex(this.network.subnet)}:${hex(this.options.index + 1)}`;
    const args = [
      `mem=${this.options.memory ?? "256M"}`,
      `umid=cstor-${process.pid}-${this.name}`,
      `uml_dir=${join(this.dir, "uml")}`,
      "root=/dev/root",
      "rootfstype=hostfs",
      "rootflags=/",
      "rw",
      `init=${GUEST_INIT}`,
      // Debian's config has 256 legacy ptys, whose set-up takes 2-4 s of a slow host's boot.
      "pty.legacy_count=0",
      "printk.time=1",
      "con=null",
      "con0=null,fd:1",
      "ssl=null",
      `vec0:transport=tap,ifname=${tap},gro=1,mac=${mac}`,
      `cstor_name=${this.name}`,
      `cstor_ip=${this.address}`,
      `cstor_spool=${this.spool}`,
      `cstor_scratch=${join(this.dir, "scratch")}`,
      `cstor_modroot=${uml.modroot}`,
      `cstor_iqn=${this.initiatorIqn}`,
      `cstor_repl_tmo=${this.options.replacementTimeoutSeconds ?? 5}`,
    ];
    const blank = args.find((arg) => /\s/.test(arg));
    if (blank) throw new Error(`kernel argument with white space: ${blank}`);
    const log = openSync(this.consoleLog, "w");
    const started = Date.now();
    // The guest's RAM is a deleted file in TMPDIR: /dev/shm keeps it in memory.
    this.child = spawn(
      this.network.prefix[0],
      [
        ...this.network.prefix.slice(1),
        "env",
        "-i",
        "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
        "TMPDIR=/dev/shm",
        `LD_PRELOAD=${uml.fpuShim}`,
        uml.kernel,
        ...args,
      ],
      { detached: true, stdio: ["ignore", log, log] },
    );
    closeSync(log);
    running.add(this.child);
    this.exited = new Promise((resolve) =>
      this.child.once("exit", () => {
        running.delete(this.child);
        resolve();
      }),
    );
    const deadline = started + (this.options.bootTimeoutMs ?? 120_000);
    while (!existsSync(join(this.spool, "ready"))) {
      if (this.ended()) throw new Error(`guest ${this.name} ended during boot${this.consoleTail()}`);
      if (Date.now() > deadline)
        throw new Error(`guest ${this.name} did not boot in time${this.consoleTail()}`);
      await sleep(50);
    }
    this.bootMs = Date.now() - started;
  }

  private ended(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /**
   * Runs a bash script in the guest, with testkit/uml/guest-lib.sh sourced first, in a fresh bash under
   * timeout(1) (cwd: a guest tmpfs). Resolves with its output and exit code (124 when the guest's timeout ended
   * it). Commands run one at a time, in the order they were sent. Background daemons a script starts must
   * redirect their output elsewhere (`setsid cmd >log 2>&1 </dev/null &`).
   */
  async exec(script: string, { timeoutMs = 60_000 }: { timeoutMs?: number } = {}): Promise<ExecResult> {
    const id = String(++this.sequence).padStart(6, "0");
    const file = join(this.spool, "cmd", `${id}.sh`);
    const seconds = Math.ceil(timeoutMs / 1000);
    await writeFile(`${file}.tmp`, `#timeout ${seconds}\n. ${GUEST_LIB}\n${script}\n`);
    await rename(`${file}.tmp`, file);
    const out = (suffix: string) => join(this.spool, "out", `${id}.${suffix}`);
    // The guest's timeout(1), its kill 2 s later and a slow guest's forks all fit in the margin.
    const deadline = Date.now() + timeoutMs + 15_000;
    for (;;) {
      const rc = await readFile(out("rc"), "utf8").catch(() => "");
      if (rc.endsWith("\n"))
        return {
          code: Number(rc.trim()),
          stdout: await readFile(out("out"), "utf8"),
          stderr: await readFile(out("err"), "utf8"),
        };
      if (this.ended())
        throw new Error(`guest ${this.name} ended while running command ${id}${this.consoleTail()}`);
      if (Date.now() > deadline)
        throw new Error(
          `guest ${this.name}: command ${id} did not finish in ${timeoutMs} ms${this.consoleTail()}`,
        );
      await sleep(25);
    }
  }

  /** Like exec, but throws unless the script exits 0; resolves with its stdout. */
  async run(script: string, options: { timeoutMs?: number } = {}): Promise<string> {
    const result = await this.exec(script, options);
    if (result.code !== 0)
      throw new Error(
        `guest ${this.name}: exit ${result.code}\n${result.stdout}${result.stderr}\n--- script:\n${script}`,
      );
    return result.stdout;
  }

  /** The last lines of the kernel's console, for failure messages. */
  consoleTail(lines = 40): string {
    let text = "(no console output)";
    try {
      text = readFileSync(this.consoleLog, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
    } catch {
      // not written yet
    }
    return `\n--- guest ${this.name} console, last ${lines} lines:\n${text}`;
  }

  /**
   * Clean shutdown: guest-init.sh stops md, logs out of the iSCSI sessions and powers off. After `timeoutMs`
   * the process group is killed (SIGKILL) whatever the guest is doing. Removes the guest's directory.
   */
  async stop(timeoutMs = 30_000): Promise<void> {
    if (this.child && !this.ended()) {
      await writeFile(join(this.spool, "poweroff"), "").catch(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.exited, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    }
    if (this.child?.pid) {
      killGroup(this.child);
      await this.exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The node dies: the kernel's process group SIGKILLed, nothing flushed, nothing logged out. */
  async crash(): Promise<void> {
    if (!this.child?.pid || this.ended()) return;
    killGroup(this.child);
    await this.exited;
  }

  /** The process ids of the guest's host processes (its process group), for checks that none is left. */
  hostPids(): number[] {
    if (!this.child?.pid) return [];
    try {
      return execFileSync("pgrep", ["-g", String(this.child.pid)], { encoding: "utf8" })
        .split("\n")
        .filter(Boolean)
        .map(Number);
    } catch {
      return [];
    }
  }
}

const hex = (n: number) => n.toString(16).padStart(2, "0");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
