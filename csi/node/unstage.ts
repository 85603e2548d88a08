// NodeUnstageVolume: the staging mount (if any) unmounted, then every session to the volume's target through
// its interface logged out unless a disk of it is still mounted elsewhere (another staging of the same session,
// a block publish). The session is found by the target's name the caller derives from the volume, not through
// the mount's device, which may be gone (docs/adr/0048-the-csi-node-reads-its-state-from-the-kernel.md). A
// staging path or session that is not there is success.
import type { NodeHost } from "./host.js";
import { canonicalPath, readMounts } from "./mounts.js";
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

export async function unstage(host: NodeHost, request: UnstageRequest): Promise<UnstageOutcome> {
  checkPath(request.volumeId, "staging path", request.stagingPath);
  const staging = await canonicalPath(request.stagingPath);
  const unmounted = (await unmountAll(host, request.volumeId, staging)).length > 0;
  const sessions = await logoutUnused(host, request.volumeId, request.session, await readMounts(host));
  return { unmounted, ...sessions };
}
