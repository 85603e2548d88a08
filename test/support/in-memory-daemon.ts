// A node daemon in the test process against the in-memory API (testkit/fake-kube.ts) or, given a client-node
// KubeApi, the real apiserver; its passes driven by the test (resync()), on the shared zfs-fuse or, with
// `commands`, on a simulated node of its own (testkit/zfs-node.ts).
import { createLogger } from "../../runtime/log.js";
import { createRunner } from "../../process/runner.js";
import { NodeDaemon } from "../../node-daemon/daemon.js";
import { inspectDevice, ZfsHost, type ZfsCommands } from "../../zfs/host.js";
import { createMetrics } from "../../node-daemon/metrics.js";
import { zvolBackend } from "../../node-daemon/replicas.js";
import type { KubeApi } from "../../node-daemon/kube.js";
import { SANDBOX_DEVICE_ROOTS } from "../../testkit/zfs.js";

export function daemonFor(
  kube: KubeApi,
  nodeName: string,
  metrics = createMetrics(),
  commands: ZfsCommands = { zpool: ["zpool"], zfs: ["zfs"], truncate: ["truncate"] },
  clock?: () => Date,
  namespace = "openebs",
  /** A host of the test's own (a ZfsHost subclass that does something mid-command), on `commands`. */
  makeHost: (runner: ReturnType<typeof createRunner>, commands: ZfsCommands) => ZfsHost = (runner, given) =>
    new ZfsHost(runner, given),
): NodeDaemon {
  return new NodeDaemon({
    ...(clock ? { clock } : {}),
    kube,
    host: makeHost(createRunner(metrics.onCommand), commands),
    inspect: inspectDevice,
    nodeName,
    namespace,
    replicaBackend: zvolBackend(),
    deviceRoots: SANDBOX_DEVICE_ROOTS,
    logger: createLogger({ level: "silent" }),
    metrics,
    statusIntervalMs: 3_600_000, // resyncs are driven by the test
  });
}
