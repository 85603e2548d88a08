// open-iscsi as the volume target's legs use it (docs/adr/0040-the-target-agent-credentials-names-and-status.md):
// iscsiadm through the one command runner, always through the target's own interface record, whose initiator
// name is the one the replicas admit; sessions are read from sysfs (no fork). Node records are manual-startup
// with CHAP and a short replacement timeout: a dead replica fails its leg quickly instead of stalling the
// volume. CHAP passwords reach iscsiadm as arguments (it takes them no other way); errors show them masked.
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { CommandError, type Runner } from "../process/runner.js";

export interface InitiatorOptions {
  /** argv prefix, e.g. ["iscsiadm"] or ["nsenter", "--target", "1", "--net", "--", "iscsiadm"] */
  iscsiadm: readonly string[];
  /** Where sysfs is mounted: "/sys". */
  sysfs: string;
  /** The interface record's name (iface.iscsi_ifacename), e.g. "cstor-1a2b3c4d". */
  iface: string;
  /** iface.initiatorname: the name the replicas' ACLs admit. */
  initiatorIqn: string;
  /** node.session.timeo.replacement_timeout of every leg: how long I/O to a lost replica waits before it fails. */
  replacementTimeoutSeconds: number;
  /**
   * node.conn[0].timeo.noop_out_interval and noop_out_timeout: a silent network partition is noticed after
   * about twice this. Default: iscsid.conf's (5 s each in open-iscsi).
   */
  noopOutSeconds?: number;
}

export interface LegLogin {
  targetIqn: string;
  /** "ip:port", "[v6]:port" */
  portal: string;
  user: string;
  password: string;
}

export interface SessionView {
  sid: number;
  targetIqn: string;
  /** "ip:port" from the connection's persistent address and port; absent while no connection exists. */
  portal?: string;
  iface?: string;
  initiatorIqn?: string;
  /** LOGGED_IN, FAILED, FREE ... */
  state: string;
  /** The session's SCSI devices that are disks, by LUN, with the size the kernel last read (a rescan reads it again). */
  luns: Record<number, { disk: string; state: string; sizeBytes: number }>;
}

/** iscsiadm's exit codes (iscsi_err.h) the initiator acts on. */
export const ISCSI_ERR = { NO_OBJS_FOUND: 21, SESS_EXISTS: 15, LOGIN_AUTH_FAILED: 24 } as const;

// A login waits for the target's answer (login_timeout, retries); a logout for the session's end.
const TIMEOUT = { timeoutMs: 60_000 };

export class IscsiInitiator {
  constructor(
    private readonly runner: Runner,
    private readonly options: InitiatorOptions,
  ) {
    checkName(options.iface, "iface");
    checkIqn(options.initiatorIqn, "initiatorIqn");
    if (!Number.isInteger(options.replacementTimeoutSeconds) || options.replacementTimeoutSeconds < 1)
      throw new Error(
        `replacementTimeoutSeconds must be a positive whole number of seconds, not ${options.replacementTimeoutSeconds}`,
      );
  }

  private async run(args: string[], secrets: string[] = []): Promise<string> {
    const argv = [...this.options.iscsiadm, ...args];
    try {
      return (await this.runner.run(argv, TIMEOUT)).stdout;
    } catch (error) {
      if (!(error instanceof CommandError) || secrets.length === 0) throw error;
      throw withoutSecrets(error, secrets);
    }
  }

  /** The interface record exists and carries the initiator name (created or corrected). */
  async ensureIface(): Promise<void> {
    const iface = this.options.iface;
    let shown: string | undefined;
    try {
      shown = await this.run(["-m", "iface", "-I", iface]);
    } catch (error) {
      // A missing record: iscsiadm cannot open its file (ISCSI_ERR_IDBM, 6) or finds nothing (21).
      if (!(error instanceof CommandError) || error.kind !== "exit" || ![6, 21].includes(error.exitCode ?? 0))
        throw error;
    }
    if (shown === undefined) await this.run(["-m", "iface", "-I", iface, "-o", "new"]);
    if (shown === undefined || ifaceValue(shown, "iface.initiatorname") !== this.options.initiatorIqn)
      await this.run([
        "-m",
        "iface",
        "-I",
        iface,
        "-o",
        "update",
        "-n",
        "iface.initiatorname",
        "-v",
        this.options.initiatorIqn,
      ]);
  }

  private node(targetIqn: string, portal: string): string[] {
    return ["-m", "node", "-T", targetIqn, "-p", portal, "-I", this.options.iface];
  }

  /**
   * Logs in to one replica through the interface: the node record is written first (manual startup, CHAP,
   * timeouts; also when it exists, so a changed password is used). Nothing to do when a session to that
   * target and portal through the interface exists already, in any state (iscsid recovers it by itself). A
   * refusal throws the CommandError with iscsiadm's words (exit 24: authorization failure).
   */
  async login(leg: LegLogin): Promise<void> {
    checkIqn(leg.targetIqn, "targetIqn");
    checkPortal(leg.portal);
    if (!leg.user || !leg.password || /\s/.test(leg.user + leg.password))
      throw new Error(
        `login to ${leg.targetIqn}: CHAP user and password must be non-empty, without white space`,
      );
    if (await this.sessionTo(leg.targetIqn, leg.portal)) return;
    const node = this.node(leg.targetIqn, leg.portal);
    await this.run([...node, "-o", "new"]);
    const settings: [string, string][] = [
      ["node.startup", "manual"],
      ["node.session.auth.authmethod", "CHAP"],
      ["node.session.auth.username", leg.user],
      ["node.session.auth.password", leg.password],
      ["node.session.timeo.replacement_timeout", String(this.options.replacementTimeoutSeconds)],
    ];
    const noop = this.options.noopOutSeconds;
    if (noop !== undefined)
      settings.push(
        ["node.conn[0].timeo.noop_out_interval", String(noop)],
        ["node.conn[0].timeo.noop_out_timeout", String(noop)],
      );
    await this.run(
      [...node, "-o", "update", ...settings.flatMap(([n, v]) => ["-n", n, "-v", v])],
      [leg.password],
    );
    try {
      await this.run([...node, "--login"]);
    } catch (error) {
      // Another login raced this one (a session appeared since the check): the leg is logged in.
      if (error instanceof CommandError && error.exitCode === ISCSI_ERR.SESS_EXISTS) return;
      throw error;
    }
  }

  /** Logs out of that target and portal (if logged in) and deletes its node record (if any). */
  async logout(targetIqn: string, portal: string): Promise<void> {
    checkIqn(targetIqn, "targetIqn");
    checkPortal(portal);
    const node = this.node(targetIqn, portal);
    const absent = (error: unknown) => {
      if (error instanceof CommandError && error.exitCode === ISCSI_ERR.NO_OBJS_FOUND) return;
      throw error;
    };
    if (await this.sessionTo(targetIqn, portal)) await this.run([...node, "--logout"]).catch(absent);
    await this.run([...node, "-o", "delete"]).catch(absent);
  }

  /**
   * Asks the target again what each LUN of the session is (`iscsiadm -m session -r SID --rescan`): a LUN that
   * grew shows its new size on its disk.
   */
  async rescan(sid: number): Promise<void> {
    await rescanSession(this.runner, this.options.iscsiadm, sid);
  }

  private async sessionTo(targetIqn: string, portal: string): Promise<SessionView | undefined> {
    const wanted = normalPortal(portal);
    return (await this.sessions()).find(
      (s) =>
        s.targetIqn === targetIqn &&
        s.iface === this.options.iface &&
        s.portal !== undefined &&
        normalPortal(s.portal) === wanted,
    );
  }

  /** Every iSCSI session of the kernel (of any interface), from sysfs. */
  async sessions(): Promise<SessionView[]> {
    return readSessions(this.options.sysfs);
  }
}

/**
 * `iscsiadm -m session -r SID --rescan` through `iscsiadm` (an argv prefix): any session, whatever interface it
 * was made through (the CSI node grows the disk of a mount it finds, without knowing the login).
 */
export async function rescanSession(runner: Runner, iscsiadm: readonly string[], sid: number): Promise<void> {
  if (!Number.isInteger(sid) || sid < 0)
    throw new Error(`rescan: session id must be a whole number (from the session list), not ${sid}`);
  await runner.run([...iscsiadm, "-m", "session", "-r", String(sid), "--rescan"], TIMEOUT);
}

/** The kernel's iSCSI sessions as sysfs shows them (class iscsi_session, iscsi_connection, the SCSI devices). */
export async function readSessions(sysfs: string): Promise<SessionView[]> {
  const sessionsDir = join(sysfs, "class", "iscsi_session");
  const names = await readdir(sessionsDir).catch(ignoreMissing);
  const views = await Promise.all(
    (names ?? [])
      .filter((name) => /^session\d+$/.test(name))
      .map((name) => readSession(sysfs, Number(name.slice("session".length)))),
  );
  return views.filter((v): v is SessionView => v !== undefined).sort((a, b) => a.sid - b.sid);
}

async function readSession(sysfs: string, sid: number): Promise<SessionView | undefined> {
  const dir = join(sysfs, "class", "iscsi_session", `session${sid}`);
  const conn = join(sysfs, "class", "iscsi_connection", `connection${sid}:0`);
  const read = (path: string) => readFile(path, "utf8").then((text) => text.trim(), ignoreMissing);
  const [targetIqn, state, iface, initiatorIqn, address, port] = await Promise.all([
    read(join(dir, "targetname")),
    read(join(dir, "state")),
    read(join(dir, "ifacename")),
    read(join(dir, "initiatorname")),
    read(join(conn, "persistent_address")),
    read(join(conn, "persistent_port")),
  ]);
  // A session that ends between readdir and here is gone.
  if (targetIqn === undefined || state === undefined) return undefined;
  const view: SessionView = { sid, targetIqn, state, luns: await readLuns(join(dir, "device")) };
  if (address && port) view.portal = address.includes(":") ? `[${address}]:${port}` : `${address}:${port}`;
  if (iface && iface !== "<NULL>") view.iface = iface;
  if (initiatorIqn && initiatorIqn !== "(null)") view.initiatorIqn = initiatorIqn;
  return view;
}

/** device/target<H>:<C>:<T>/<H>:<C>:<T>:<LUN>/{state,block/<disk>}: the LUNs that are disks. */
async function readLuns(device: string): Promise<SessionView["luns"]> {
  const luns: SessionView["luns"] = {};
  for (const target of ((await readdir(device).catch(ignoreMissing)) ?? []).filter((e) =>
    e.startsWith("target"),
  )) {
    for (const hctl of (await readdir(join(device, target)).catch(ignoreMissing)) ?? []) {
      const lun = /^\d+:\d+:\d+:(\d+)$/.exec(hctl)?.[1];
      if (lun === undefined) continue;
      const [disks, state] = await Promise.all([
        readdir(join(device, target, hctl, "block")).catch(ignoreMissing),
        readFile(join(device, target, hctl, "state"), "utf8").catch(ignoreMissing),
      ]);
      // LUN 0 of a tgt export is its controller: no block device.
      if (!disks?.length || state === undefined) continue;
      // In 512-byte sectors, whatever the disk's block size.
      const sectors = await readFile(join(device, target, hctl, "block", disks[0], "size"), "utf8").catch(
        ignoreMissing,
      );
      if (sectors === undefined) continue;
      luns[Number(lun)] = { disk: disks[0], state: state.trim(), sizeBytes: Number(sectors.trim()) * 512 };
    }
  }
  return luns;
}

/**
 * A sysfs object that is not there, or is being removed while it is read: a session or LUN torn down (a logout, a
 * replica gone) makes its attributes read as ENODEV until they vanish. Either way it is gone for the reader.
 */
export function goneFromSysfs(error: NodeJS.ErrnoException): boolean {
  return error.code === "ENOENT" || error.code === "ENOTDIR" || error.code === "ENODEV";
}

const ignoreMissing = (error: NodeJS.ErrnoException): undefined => {
  if (goneFromSysfs(error)) return undefined;
  throw error;
};

/** The same failure with every argument that is one of `secrets` shown as "(secret)" (its message too). */
export function withoutSecrets(error: CommandError, secrets: readonly string[]): CommandError {
  return new CommandError(
    error.argv.map((arg) => (secrets.includes(arg) ? "(secret)" : arg)),
    error,
  );
}

/** One "key = value" of `iscsiadm -m iface -I <name>`. */
export function ifaceValue(shown: string, key: string): string | undefined {
  for (const line of shown.split("\n")) {
    const at = line.indexOf(" = ");
    if (at > 0 && line.slice(0, at).trim() === key) {
      const value = line.slice(at + 3).trim();
      return value === "<empty>" ? undefined : value;
    }
  }
  return undefined;
}

/** "10.0.0.1:3260", "[fd00::1]:3260"; iscsiadm and sysfs agree on this once brackets are settled. */
function normalPortal(portal: string): string {
  return portal.trim().toLowerCase();
}

function checkPortal(portal: string): void {
  if (!/^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]):\d{1,5}$/.test(portal))
    throw new Error(
      `portal ${JSON.stringify(portal)}: give "ip:port" (IPv6 as "[addr]:port"), such as "10.0.0.5:3260"`,
    );
}

function checkIqn(iqn: string, what: string): void {
  if (
    !/^(iqn\.\d{4}-\d{2}\.[^\s]+|eui\.[0-9A-Fa-f]{16}|naa\.[0-9A-Fa-f]{16,32})$/.test(iqn) ||
    iqn.length > 223
  )
    throw new Error(
      `${what} ${JSON.stringify(iqn)}: give an iSCSI name such as "iqn.2016-09.com.openebs.cstor:vol1"`,
    );
}

function checkName(name: string, what: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name))
    throw new Error(`${what} ${JSON.stringify(name)}: use letters, digits, ".", "_" and "-" (at most 64)`);
}
