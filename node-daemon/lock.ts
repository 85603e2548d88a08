// The host lock: one acting daemon per node, even if two daemon pods run there during a rollout. An
// exclusive lock file (open 'wx') holding the owner's pid, pid namespace and a token; the owner refreshes
// its mtime. A lock is stale when its pid is gone (same pid namespace) or its mtime stopped moving (other
// namespaces cannot see the pid).
import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, readlink, stat, unlink, utimes } from "node:fs/promises";
import { join } from "node:path";

export interface HostLock {
  readonly path: string;
  /** False once another process took the lock over (this one was considered dead). */
  held(): Promise<boolean>;
  release(): Promise<void>;
}

export interface LockOptions {
  dir: string;
  /** How often the owner touches the file; default 10 s. */
  refreshMs?: number;
  /** mtime older than this makes a lock stale; default 60 s. */
  staleMs?: number;
}

interface LockContent {
  pid: number;
  pidNamespace: string;
  token: string;
  since: string;
}

export const LOCK_FILE = "node-daemon.lock";

async function pidNamespace(): Promise<string> {
  return readlink("/proc/self/ns/pid").catch(() => "unknown");
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Takes the lock, or returns undefined with the holder's description when it is held. */
export async function tryLock(options: LockOptions): Promise<{ lock?: HostLock; holder?: string }> {
  const refreshMs = options.refreshMs ?? 10_000;
  const staleMs = options.staleMs ?? 60_000;
  await mkdir(options.dir, { recursive: true });
  const path = join(options.dir, LOCK_FILE);
  const content: LockContent = {
    pid: process.pid,
    pidNamespace: await pidNamespace(),
    token: randomBytes(8).toString("hex"),
    since: new Date().toISOString(),
  };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, "wx");
      await handle.writeFile(JSON.stringify(content));
      await handle.close();
      return { lock: ownLock(path, content.token, refreshMs) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = await readHolder(path);
    if (!(await isStale(path, holder, content.pidNamespace, staleMs))) {
      return {
        holder: holder ? `pid ${holder.pid} (${holder.pidNamespace}) since ${holder.since}` : "unknown",
      };
    }
    await unlink(path).catch(() => undefined);
  }
  return { holder: "another process racing for the lock" };
}

async function readHolder(path: string): Promise<LockContent | undefined> {
  try {
    return JSON.parse(await readFile(path, "utf8")) as LockContent;
  } catch {
    return undefined;
  }
}

async function isStale(
  path: string,
  holder: LockContent | undefined,
  namespace: string,
  staleMs: number,
): Promise<boolean> {
  if (holder && holder.pidNamespace === namespace && holder.pid !== process.pid) return !alive(holder.pid);
  const info = await stat(path).catch(() => undefined);
  return !info || Date.now() - info.mtimeMs > staleMs;
}

function ownLock(path: string, token: string, refreshMs: number): HostLock {
  const timer = setInterval(() => {
    const now = new Date();
    void utimes(path, now, now).catch(() => undefined);
  }, refreshMs);
  timer.unref();
  return {
    path,
    async held() {
      return (await readHolder(path))?.token === token;
    },
    async release() {
      clearInterval(timer);
      if ((await readHolder(path))?.token === token) await unlink(path).catch(() => undefined);
    },
  };
}
