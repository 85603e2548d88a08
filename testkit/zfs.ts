// Real zfs-fuse pools for the node daemon's tests: sparse files (and loop devices for read caches) in a
// temp dir, unique pool names per test, everything destroyed afterwards. scripts/test-env.sh installs and
// starts zfs-fuse; this module only checks it answers.
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ANNOTATION, API_VERSION, FINALIZER, KIND, LABEL } from "../api/constants.js";
import type { CSPI, CSPIRaidGroup, CVR } from "../api/types.js";
import { allLeaves, parseZpoolStatus } from "../zfs/parse.js";

export const MiB = 1024 * 1024;

/**
 * The device roots (the node daemon's DEVICE_ROOTS) of a daemon working on sandbox pools: every sandbox's
 * sparse files are in the temp dir, its loop devices under /dev/.
 */
export const SANDBOX_DEVICE_ROOTS: readonly string[] = ["/dev/", `${tmpdir()}/`];

function run(argv: string[]): string {
  return execFileSync(argv[0], argv.slice(1), { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

function zfsAnswers(): boolean {
  try {
    run(["zpool", "list"]);
    return true;
  } catch {
    return false;
  }
}

/** What prepares this machine for the tests, zfs-fuse included. */
export const TEST_ENV_SCRIPT = new URL("../scripts/test-env.sh", import.meta.url).pathname;

/**
 * zfs-fuse answers, or is started again. zfs-fuse 0.7 has been seen to exit without a trace after hours of
 * test pools; one crash must fail the test it happened in, not every suite after it.
 */
export function requireZfs(): void {
  if (zfsAnswers()) return;
  process.stderr.write("test support: zfs-fuse is not answering; starting it again (scripts/test-env.sh)\n");
  try {
    execFileSync("bash", [TEST_ENV_SCRIPT], { stdio: ["ignore", "ignore", "pipe"], timeout: 120_000 });
  } catch (error) {
    throw new Error(`zfs-fuse is not answering and could not be started: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (!zfsAnswers()) throw new Error("zfs-fuse is not answering after scripts/test-env.sh started it");
}

export function zpool(...args: string[]): string {
  return run(["zpool", ...args]);
}

export function zfs(...args: string[]): string {
  return run(["zfs", ...args]);
}

/** A temp dir of sparse files and loop devices; cleanup() destroys every pool that uses them. */
export class ZfsSandbox {
  readonly dir = mkdtempSync(join(tmpdir(), "cstor-nd-"));
  private readonly loops: string[] = [];
  readonly id = randomBytes(3).toString("hex");

  /** A unique CSPI name for this sandbox: pool "cstor-<name>". */
  name(label: string): string {
    return `${label}-${this.id}`;
  }

  file(name: string, sizeMiB = 128): string {
    const path = join(this.dir, name);
    run(["truncate", "-s", `${sizeMiB}M`, path]);
    return path;
  }

  grow(path: string, sizeMiB: number): void {
    run(["truncate", "-s", `${sizeMiB}M`, path]);
  }

  /** A loop device over a sparse file: ZFS accepts only block devices as cache (L2ARC) devices. */
  loop(name: string, sizeMiB = 64): string {
    const device = run(["losetup", "-f", "--show", this.file(name, sizeMiB)]).trim();
    this.loops.push(device);
    return device;
  }

  /** Pools whose devices live in this sandbox. */
  pools(): string[] {
    const statuses = parseZpoolStatus(zpool("status"));
    return statuses
      .filter((p) =>
        allLeaves(p.layout).some(
          (leaf) =>
            (leaf.device ?? leaf.name).startsWith(this.dir) ||
            this.loops.some((l) => l.endsWith(`/${leaf.name}`) || l === leaf.device),
        ),
      )
      .map((p) => p.name);
  }

  cleanup(): void {
    for (const pool of this.pools()) destroyPool(pool);
    for (const loop of this.loops) {
      try {
        run(["losetup", "-d", loop]);
      } catch {
        // already detached
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Destroys a test's pool; zfs-fuse may call it busy for a while after its last user went (seconds, under load). */
export function destroyPool(pool: string): void {
  for (let attempt = 0; attempt < 40; attempt++) {
    try {
      for (const dataset of zfs("list", "-H", "-o", "name", "-r", pool)
        .split("\n")
        .filter(Boolean)
        .reverse()) {
        try {
          run(["zfs", "unmount", dataset]);
        } catch {
          // not mounted
        }
      }
      zpool("destroy", pool);
      return;
    } catch {
      execFileSync("sleep", ["0.5"]);
    }
  }
  zpool("destroy", "-f", pool);
}

export interface GroupInput {
  type?: CSPIRaidGroup["type"];
  role?: "writeCache" | "readCache" | "spare";
  devices: string[];
}

/** A CSPI as the cspc-sync hook builds it: block devices named after their files. */
export function cspiFor(
  name: string,
  hostName: string,
  groups: GroupInput[],
  poolConfig: CSPI["spec"]["poolConfig"] = {},
): CSPI {
  return {
    apiVersion: API_VERSION,
    kind: KIND.cspi,
    metadata: { name, namespace: "openebs", uid: `uid-${name}`, labels: { [LABEL.hostname]: hostName } },
    spec: {
      hostName,
      nodeSelector: { "kubernetes.io/hostname": hostName },
      poolConfig: { compression: "off", roThresholdLimit: 85, ...poolConfig },
      raidGroups: groups.map((g) => ({
        type: g.type ?? "stripe",
        ...(g.role === "writeCache"
          ? { isWriteCache: true }
          : g.role === "readCache"
            ? { isReadCache: true }
            : g.role === "spare"
              ? { isSpare: true }
              : {}),
        blockDevices: g.devices.map((devLink) => ({ blockDeviceName: blockDeviceName(devLink), devLink })),
      })),
    },
  };
}

/** The CSPI moved to another node as cspc-sync moves it: its hostName, its nodeSelector and its hostname label. */
export function cspiMovedTo(cspi: CSPI, hostName: string): CSPI {
  return {
    ...cspi,
    metadata: { ...cspi.metadata, labels: { ...cspi.metadata.labels, [LABEL.hostname]: hostName } },
    spec: { ...cspi.spec, hostName, nodeSelector: { [LABEL.hostname]: hostName } },
  };
}

export function blockDeviceName(devLink: string): string {
  return `bd-${devLink.split("/").pop()}`;
}

/** A Node as its kubelet registers it, labelled with its hostname. */
export function nodeObject(name: string) {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels: { [LABEL.hostname]: name, "kubernetes.io/os": "linux" } },
  };
}

/** A BlockDevice as NDM reports a device file of the sandbox on a node, named by blockDeviceName. */
export function ndmBlockDevice(path: string, node: string, sizeMiB: number, namespace: string) {
  return {
    apiVersion: API_VERSION,
    kind: KIND.blockDevice,
    metadata: {
      name: blockDeviceName(path),
      namespace,
      labels: { [LABEL.hostname]: node, "ndm.io/blockdevice-type": "blockdevice" },
    },
    spec: {
      path,
      capacity: { storage: sizeMiB * MiB },
      devlinks: [{ kind: "by-id", links: [path] }],
      filesystem: {},
      nodeAttributes: { nodeName: node },
    },
    status: { claimState: "Unclaimed", state: "Active" },
  };
}

/** A CVR as cvc-sync emits it: <volume>-<cspi>, its labels, the pool's host, the replica finalizer. */
export function cvrObject(replica: {
  volume: string;
  cspi: string;
  host: string;
  capacity: string;
  namespace: string;
  cspc: string;
  /** spec.source: the replica starts as a clone of this replica's snapshot (a restore). */
  source?: { replica: string; snapshot: string };
}): CVR {
  const { volume, cspi, host, capacity, namespace, cspc, source } = replica;
  return {
    apiVersion: API_VERSION,
    kind: KIND.cvr,
    metadata: {
      name: `${volume}-${cspi}`,
      namespace,
      labels: {
        [LABEL.replicaPool]: cspi,
        [LABEL.replicaVolume]: volume,
        [LABEL.persistentVolume]: volume,
        [LABEL.cspc]: cspc,
      },
      annotations: { [ANNOTATION.replicaPoolHost]: host },
      finalizers: [FINALIZER.replicaProtection],
    },
    spec: { capacity, replicaId: `${volume}-r1`, ...(source ? { source } : {}) },
  };
}

/** A dataset with a mountpoint in the sandbox and a file of random data; returns the file and its checksum. */
export function writeData(sandbox: ZfsSandbox, dataset: string, sizeMiB = 4): { file: string; sha: string } {
  const mountpoint = join(sandbox.dir, `mnt-${dataset.replace(/\W/g, "-")}`);
  zfs("create", "-o", `mountpoint=${mountpoint}`, dataset);
  const file = join(mountpoint, "data.bin");
  const data = randomBytes(sizeMiB * MiB);
  writeFileSync(file, data);
  return { file, sha: createHash("sha256").update(data).digest("hex") };
}

export function checksum(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}
