// The pool move of test/support/pool-move-scenario.ts under the real Metacontroller (METACONTROLLER_BIN and
// METACONTROLLER_CRDS; `npm run test:e2e`), with the hook server as the shipped process: a pool that serves a
// replica, its pod's readiness decided by what its node holds, no Deployment made available by fiat.
import { HookServerProcess } from "../../testkit/hook-server-process.js";
import { INSTALL_NAMESPACE, type KubeCluster } from "../../testkit/kube.js";
import {
  MetacontrollerProcess,
  pointHooksAt,
  realMetacontrollerFromEnv,
} from "../../testkit/real-metacontroller.js";
import { describePoolMove } from "../support/pool-move-scenario.js";

class RealController {
  private hooks?: HookServerProcess;
  private metacontroller?: MetacontrollerProcess;

  async start(cluster: KubeCluster): Promise<void> {
    const real = realMetacontrollerFromEnv();
    // Metacontroller's own CRDs over the copy the install carries (same objects, same field manager).
    await cluster.kubectl(["apply", "--server-side", "-f", real.crds]);
    this.hooks = await HookServerProcess.start(cluster, INSTALL_NAMESPACE);
    await pointHooksAt(cluster, this.hooks.url);
    this.metacontroller = await MetacontrollerProcess.start(real.bin, cluster.admin.kubeconfig);
  }

  async step(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  async stop(): Promise<void> {
    await this.metacontroller?.stop();
    await this.hooks?.stop();
  }

  tail(): string {
    return (this.metacontroller?.tail(30) ?? "") + (this.hooks?.tail(10) ?? "");
  }

  problems(): string[] {
    return [
      ...(this.metacontroller?.errors() ?? []).map((line) => `metacontroller: ${line.msg}`),
      ...(this.hooks?.refusals() ?? []).map((line) => `hook server: ${line}`),
    ];
  }
}

describePoolMove(
  "e2e: a pool that serves a replica moves to another node under the real Metacontroller (hook server, node daemons, zfs-fuse, tgtd and the pool agent)",
  new RealController(),
);
