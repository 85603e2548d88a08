// The node's iSCSI session to a volume's target, through open-iscsi as the volume target's legs use it
// (iscsi/initiator.ts): an interface record whose initiator name is the one the target admits, CHAP, manual
// startup. Stage logs in and waits (bounded) for the LUN's disk; unstage logs out of every session to the
// target through that interface unless one of its disks is still mounted somewhere
// (docs/adr/0048-the-csi-node-reads-its-state-from-the-kernel.md).
import { CommandError } from "../../process/runner.js";
import { ISCSI_ERR, IscsiInitiator, readSessions, type SessionView } from "../../iscsi/initiator.js";
import { readDisk, mountsOfDisk, type Disk } from "./disk.js";
import { NodeOperationError, commandFailed } from "./errors.js";
import type { NodeHost } from "./host.js";
import type { MountEntry } from "./mounts.js";

/** Where the volume's data is: the target's name, its portal ("ip:port") and the LUN. */
export interface LunAddress {
  targetIqn: string;
  portal: string;
  lun: number;
}

/** How this node logs in to the target. */
export interface SessionLogin {
  /** The open-iscsi interface record (iface.iscsi_ifacename) the session is made through. */
  iface: string;
  /** The record's initiator name: the one the target's ACL admits. */
  initiatorIqn: string;
  /** CHAP */
  user: string;
  password: string;
  /** How long I/O waits for a lost connection to come back before it fails (the application's side: long). */
  replacementTimeoutSeconds: number;
}

/** open-iscsi's exit code for a login the target refused for good (no such target, or not for this initiator). */
const FATAL_LOGIN = 19;
/** Transport errors and timeouts: the portal did not answer. */
const UNREACHABLE = [4, 8, 11];

type InterfaceRecord = Pick<SessionLogin, "iface" | "initiatorIqn" | "replacementTimeoutSeconds">;

function initiator(host: NodeHost, volumeId: string, record: InterfaceRecord): IscsiInitiator {
  try {
    return new IscsiInitiator(host.runner, {
      iscsiadm: host.iscsiadm,
      sysfs: host.sysfs,
      iface: record.iface,
      initiatorIqn: record.initiatorIqn,
      replacementTimeoutSeconds: record.replacementTimeoutSeconds,
    });
  } catch (error) {
    throw new NodeOperationError("INVALID_ARGUMENT", `volume ${volumeId}: ${(error as Error).message}`);
  }
}

/** A refused or failed login, with the code CSI gives it and what to check. */
function loginFailed(volumeId: string, address: LunAddress, login: SessionLogin, error: unknown) {
  const at = `volume ${volumeId}: login to ${address.targetIqn} at ${address.portal} as ${login.initiatorIqn}`;
  if (!(error instanceof CommandError)) return commandFailed(at, error);
  if (error.exitCode === ISCSI_ERR.LOGIN_AUTH_FAILED)
    return new NodeOperationError(
      "UNAUTHENTICATED",
      `${at} was refused: the CHAP user or password is wrong (check the volume's CHAP secret): ${error.message}`,
      { cause: error },
    );
  if (error.exitCode === FATAL_LOGIN)
    return new NodeOperationError(
      "NOT_FOUND",
      `${at} was refused: the portal serves no such target, or not to this initiator ` +
        `(check that the volume exists and is published to this node): ${error.message}`,
      { cause: error },
    );
  if (error.exitCode !== null && UNREACHABLE.includes(error.exitCode))
    return new NodeOperationError("UNAVAILABLE", `${at}: the portal did not answer: ${error.message}`, {
      cause: error,
    });
  return commandFailed(at, error);
}

const samePortal = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();

/** The session to `address` through `iface`, if one exists (in any state). */
export function sessionTo(sessions: readonly SessionView[], address: LunAddress, iface: string) {
  return sessions.find(
    (s) =>
      s.targetIqn === address.targetIqn &&
      s.iface === iface &&
      s.portal !== undefined &&
      samePortal(s.portal, address.portal),
  );
}

/** The LUN's disk once its session is logged in and the disk is running; undefined before. */
export async function lunDisk(host: NodeHost, address: LunAddress, iface: string): Promise<Disk | undefined> {
  const session = sessionTo(await readSessions(host.sysfs), address, iface);
  const lun = session?.state === "LOGGED_IN" ? session.luns[address.lun] : undefined;
  return lun?.state === "running" ? readDisk(host, lun.disk) : undefined;
}

/**
 * The kubelet stages volumes side by side, and iscsiadm writes its interface and node records without a lock
 * that holds across processes (democratic-csi retries "encountered iSCSI database failure" for this, Red Hat bug
 * 884427): this process's logins take turns. Each turn is one attempt, bounded by iscsiadm's timeout; the wait
 * between retries is outside it. The guest test's two first logins side by side passed without it too.
 */
let loginTurn: Promise<unknown> = Promise.resolve();
function oneAtATime(attempt: () => Promise<void>): Promise<void> {
  const turn = loginTurn.then(attempt);
  loginTurn = turn.catch(() => undefined);
  return turn;
}

/** Between two logins a target refused for good: the target admits this node once ControllerPublish wrote it. */
const LOGIN_RETRY_MS = 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Logs in (nothing to do when the session exists). A target that does not admit this initiator yet is asked
 * again until `deadline`: ControllerPublishVolume names the node, and the target admits it at its next pass
 * (ADR 47). Any other refusal is answered at once.
 */
async function logIn(
  host: NodeHost,
  request: { volumeId: string; address: LunAddress; login: SessionLogin },
  deadline: number,
) {
  const { volumeId, address, login } = request;
  const legs = initiator(host, volumeId, login);
  for (;;) {
    try {
      await oneAtATime(async () => {
        await legs.ensureIface();
        await legs.login({
          targetIqn: address.targetIqn,
          portal: address.portal,
          user: login.user,
          password: login.password,
        });
      });
      return;
    } catch (error) {
      if (error instanceof NodeOperationError) throw error;
      if (!(error instanceof CommandError))
        throw new NodeOperationError("INVALID_ARGUMENT", `volume ${volumeId}: ${(error as Error).message}`);
      if (error.exitCode !== FATAL_LOGIN || Date.now() + LOGIN_RETRY_MS > deadline)
        throw loginFailed(volumeId, address, login, error);
    }
    await sleep(LOGIN_RETRY_MS);
  }
}

/** Logs in and waits, both bounded by the host's device wait, for the LUN's disk. */
export async function loginAndWait(
  host: NodeHost,
  volumeId: string,
  address: LunAddress,
  login: SessionLogin,
): Promise<Disk> {
  const deadline = Date.now() + host.deviceWaitMs;
  await logIn(host, { volumeId, address, login }, deadline);
  for (;;) {
    const disk = await lunDisk(host, address, login.iface);
    if (disk) return disk;
    if (Date.now() > deadline) {
      const session = sessionTo(await readSessions(host.sysfs), address, login.iface);
      throw new NodeOperationError(
        "UNAVAILABLE",
        `volume ${volumeId}: logged in to ${address.targetIqn} at ${address.portal}, but LUN ${address.lun} ` +
          `has no running disk after ${host.deviceWaitMs} ms (session ${
            session ? `${session.state}, LUNs ` + `${JSON.stringify(session.luns)}` : "gone"
          }): check that the target serves LUN ${address.lun}`,
      );
    }
    await sleep(100);
  }
}

export interface LogoutOutcome {
  /** Portals logged out of. */
  loggedOut: string[];
  /** Sessions kept because a disk of theirs is mounted: the portal and the mount points. */
  kept: { portal: string; mountPoints: string[] }[];
}

/** Logs out of every session to one of `targetIqns` through `iface` none of whose disks is mounted (`mounts`). */
export async function logoutUnused(
  host: NodeHost,
  volumeId: string,
  sessions: { targetIqns: readonly string[]; iface: string; initiatorIqn: string },
  mounts: readonly MountEntry[],
): Promise<LogoutOutcome> {
  const outcome: LogoutOutcome = { loggedOut: [], kept: [] };
  // A logout writes no node record, so the replacement timeout a record would carry is not used.
  const legs = initiator(host, volumeId, { ...sessions, replacementTimeoutSeconds: 1 });
  const found = (await readSessions(host.sysfs)).filter(
    (s) => sessions.targetIqns.includes(s.targetIqn) && s.iface === sessions.iface && s.portal !== undefined,
  );
  for (const s of found) {
    const mountPoints: string[] = [];
    for (const lun of Object.values(s.luns)) {
      const disk = await readDisk(host, lun.disk);
      if (disk) mountPoints.push(...(await mountsOfDisk(mounts, disk.device)));
    }
    if (mountPoints.length > 0) {
      outcome.kept.push({ portal: s.portal!, mountPoints });
      continue;
    }
    await legs.logout(s.targetIqn, s.portal!).catch((error: unknown) => {
      throw commandFailed(`volume ${volumeId}: logout of ${s.targetIqn} at ${s.portal}`, error);
    });
    outcome.loggedOut.push(s.portal!);
  }
  return outcome;
}
