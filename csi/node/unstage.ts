// NodeUnstageVolume: the staging mount (if any) unmounted, then every session to the volume's target through
// its interface logged out unless a disk of it is still mounted elsewhere (another staging of the same session,
// a block publish). The session is found by the target's name the caller derives from the volume, so a mount
// whose disk is gone does not hide it (docs/adr/0048-the-csi-node-reads-its-state-from-the-kernel.md), and also
// through the disk of the mount taken off, so a volume whose target has another name (a PV made by hand) is
// logged out too. A staging path or session that is not there is success.
import { readSessions } from "../../iscsi/initiator.js";
import { diskOfDevice } from "./disk.js";
import type { NodeHost } from "./host.js";
import { canonicalPath, readMounts, type MountEntry } from "./mounts.js";
import { checkPath } from "./paths.js";
import { logoutUnused, type LogoutOutcome } from "./session.js";
import { unmountAll } from "./unmount.js";

export interface UnstageRequest {
  volumeId: string;
  stagingPath: string;
  /** The volume's target and the interface record stage logged in through. */
  session: { targetIqn: string; iface: string; initiatorIqn: string };
}

export interface UnstageOutcome extends LogoutOutcome {
  unmounted: boolean;
}

/** The targets (through `iface`) of the sessions holding the disks the unmounted entries were mounted from. */
async function targetsOf(host: NodeHost, iface: string, unmounted: readonly MountEntry[]): Promise<string[]> {
  const sessions = (await readSessions(host.sysfs)).filter((s) => s.iface === iface);
  const targets: string[] = [];
  for (const mount of unmounted) {
    const disk = await diskOfDevice(host, mount.device);
    const session = sessions.find((s) => Object.values(s.luns).some((lun) => lun.disk === disk?.name));
    if (session) targets.push(session.targetIqn);
  }
  return targets;
}

export async function unstage(host: NodeHost, request: UnstageRequest): Promise<UnstageOutcome> {
  checkPath(request.volumeId, "staging path", request.stagingPath);
  const { targetIqn, iface, initiatorIqn } = request.session;
  const staging = await canonicalPath(request.stagingPath);
  const unmounted = await unmountAll(host, request.volumeId, staging);
  const targetIqns = [...new Set([targetIqn, ...(await targetsOf(host, iface, unmounted))])];
  const sessions = await logoutUnused(
    host,
    request.volumeId,
    { targetIqns, iface, initiatorIqn },
    await readMounts(host),
  );
  return { unmounted: unmounted.length > 0, ...sessions };
}
