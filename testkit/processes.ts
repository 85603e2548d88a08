// Long-lived helper processes started by tests (etcd, kube-apiserver, zfs-fuse, hook servers), stopped once
// at the end of the run so each is started at most once per run.
type Stopper = () => Promise<void>;
const stoppers: Stopper[] = [];

export function onStop(stop: Stopper): void {
  stoppers.push(stop);
}

export async function stopAll(): Promise<void> {
  while (stoppers.length > 0) {
    const stop = stoppers.pop()!;
    await stop().catch(() => undefined);
  }
}
