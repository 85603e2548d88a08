// The control plane of a whole-lifecycle run, each part as a production install runs it and each restartable:
// the hook server process, and Metacontroller (the real binary when METACONTROLLER_BIN and
// METACONTROLLER_CRDS are set, else the emulator of testkit/metacontroller-loop.ts driving the hook server
// over HTTP). Shared by the chaos runs (test/chaos/), the end-to-end benchmark (bench/e2e.ts) and the pool move
// (test/support/pool-move-scenario.ts).
import { HookServerProcess } from "./hook-server-process.js";
import { INSTALL_NAMESPACE, type KubeCluster } from "./kube.js";
import { MetacontrollerDriver } from "./metacontroller-driver.js";
import { MetacontrollerLoop } from "./metacontroller-loop.js";
import {
  MetacontrollerProcess,
  pointHooksAt,
  realMetacontrollerFromEnv,
  NotConfigured,
  type RealMetacontroller,
} from "./real-metacontroller.js";

export const NS = INSTALL_NAMESPACE;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The hook server process; a restart gives it a new port, and Metacontroller is pointed at it. */
export class HookServer {
  process!: HookServerProcess;
  readonly processes: HookServerProcess[] = [];
  constructor(private readonly cluster: KubeCluster) {}

  async start(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        this.process = await HookServerProcess.start(this.cluster, NS);
        this.processes.push(this.process);
        return;
      } catch (error) {
        if (attempt >= 30) throw error;
        await sleep(Math.min(10_000, 500 * attempt));
      }
    }
  }

  async stop(): Promise<void> {
    await this.process.stop();
  }
}

/** Metacontroller as the run plays it: started, stopped, and told where the hook server is now. */
export interface Metacontroller {
  readonly description: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  hooksMoved(url: string): Promise<void>;
  /** Its log lines at error level (the real binary) or the errors its syncs ended in (the emulator), newest last. */
  errors(): string[];
}

/**
 * The emulator (testkit/metacontroller-loop.ts) pumped in real time: relist and sync what is queued, move
 * its virtual clock by the real time that passed (resyncs fall due), again every 500 ms. A sync that fails (the
 * hook server or the apiserver down) throws; Metacontroller would requeue it with backoff, here the loop is
 * started afresh after a second, which enqueues every parent again as an informer restart does.
 */
class EmulatedMetacontroller implements Metacontroller {
  readonly description =
    "the Metacontroller emulator (testkit/metacontroller-loop.ts); set METACONTROLLER_BIN and METACONTROLLER_CRDS for the real binary";
  private driver: MetacontrollerDriver;
  private running: Promise<void> | undefined;
  private stopping = false;
  private readonly failures: string[] = [];

  constructor(
    private readonly cluster: KubeCluster,
    hookUrl: string,
  ) {
    this.driver = new MetacontrollerDriver({ cluster, hookServer: hookUrl });
  }

  async start(): Promise<void> {
    this.stopping = false;
    this.running = this.pump();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
    this.running = undefined;
  }

  async hooksMoved(url: string): Promise<void> {
    this.driver = new MetacontrollerDriver({ cluster: this.cluster, hookServer: url });
  }

  errors(): string[] {
    return this.failures;
  }

  private async pump(): Promise<void> {
    let loop: MetacontrollerLoop | undefined;
    while (!this.stopping) {
      try {
        if (!loop) {
          loop = new MetacontrollerLoop(this.driver, NS);
          await loop.start();
        }
        await loop.runInRealTime(200);
        await sleep(500);
      } catch (error) {
        this.failures.push(String((error as Error).message ?? error).slice(0, 300));
        loop = undefined;
        await sleep(1000);
      }
    }
  }
}

class RealMetacontrollerPart implements Metacontroller {
  readonly description: string;
  private process: MetacontrollerProcess | undefined;
  private readonly processes: MetacontrollerProcess[] = [];

  constructor(
    private readonly cluster: KubeCluster,
    private readonly real: RealMetacontroller,
    private hookUrl: string,
  ) {
    this.description = `the real Metacontroller (${real.bin})`;
  }

  async start(): Promise<void> {
    await pointHooksAt(this.cluster, this.hookUrl);
    this.process = await MetacontrollerProcess.start(this.real.bin, this.cluster.admin.kubeconfig);
    this.processes.push(this.process);
  }

  async stop(): Promise<void> {
    await this.process?.stop();
    this.process = undefined;
  }

  async hooksMoved(url: string): Promise<void> {
    this.hookUrl = url;
    // Metacontroller watches its controllers: the new URL is used from the next sync on.
    await pointHooksAt(this.cluster, url);
  }

  errors(): string[] {
    return this.processes.flatMap((p) => p.errors().map((l) => JSON.stringify(l)));
  }
}

/** The real binary when the environment names it (and its CRDs are applied), else the emulator. */
export async function metacontrollerFor(cluster: KubeCluster, hookUrl: string): Promise<Metacontroller> {
  let real: RealMetacontroller;
  try {
    real = realMetacontrollerFromEnv();
  } catch (error) {
    if (error instanceof NotConfigured) return new EmulatedMetacontroller(cluster, hookUrl);
    throw error;
  }
  await cluster.kubectl(["apply", "--server-side", "-f", real.crds]);
  return new RealMetacontrollerPart(cluster, real, hookUrl);
}
