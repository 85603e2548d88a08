// tgt (Linux SCSI target framework) as the agent drives it: tgtadm through the one command runner, argv arrays
// only, against the tgtd of the pod (its control port picks the socket). Parsing is pure and separate.
import type { Runner } from "../process/runner.js";
import { TARGET_SESSION_PARAMETERS } from "./negotiation.js";

export interface TgtLun {
  backingStore: string;
  /** The size tgtd serves, in its own rounded megabytes (`tgtShownMegabytes`); read when the LUN was opened. */
  shownMegabytes?: number;
  /** The backing store's open flags as tgtd shows them ("sync:direct" is ["sync", "direct"]); empty for none. */
  flags: string[];
}

export interface TgtTarget {
  tid: number;
  iqn: string;
  /** LUNs with a backing store, by number (LUN 0 is tgt's own controller, with none). */
  luns: Record<number, TgtLun>;
  /** Initiator addresses or names bound to the target; "ALL" lets any initiator log in, none lets nobody. */
  acl: string[];
  /**
   * The incoming CHAP accounts bound to the target: with one, an initiator must prove its password. Outgoing
   * accounts (the target proving itself to the initiator) decide nothing about who logs in and are not listed.
   */
  accounts: string[];
  /** Initiator names with an I_T nexus (logged in) to the target now. */
  loggedIn: string[];
}

/** One target with LUN 1, admitting one initiator name with one CHAP account. */
export interface TgtExport {
  tid: number;
  iqn: string;
  backingStore: string;
  /** The only initiator name the target admits. */
  initiatorName: string;
  /** The incoming CHAP account: tgtd-global, named after the user; one per export. */
  user: string;
  password: string;
}

/**
 * The LUN's backing store is opened O_SYNC: every write reaches the disk (for a zvol: a flush, so ZFS commits
 * it to its intent log) before tgtd acknowledges it, so an acknowledged write survives the node's crash. tgtd
 * shows the flag (`Backing store flags: sync`), unlike the caching mode page an initiator may change.
 */
export const WRITE_THROUGH_FLAG = "sync";

const TIMEOUT = { timeoutMs: 30_000 };

export class Tgt {
  constructor(
    private readonly runner: Runner,
    /** ["tgtadm", "-C", "<control port>"] */
    private readonly tgtadm: readonly string[],
  ) {}

  /** `secret`, when given, is never shown: a failure's message (which quotes the command) has it replaced. */
  private async run(args: string[], secret?: string): Promise<string> {
    try {
      return (await this.runner.run([...this.tgtadm, "--lld", "iscsi", ...args], TIMEOUT)).stdout;
    } catch (error) {
      throw secret === undefined ? error : withoutSecret(error as Error, secret);
    }
  }

  async targets(): Promise<TgtTarget[]> {
    return parseTargets(await this.run(["--mode", "target", "--op", "show"]));
  }

  /** Every CHAP account tgtd holds, bound or not (accounts are tgtd-wide, not per target). */
  async accounts(): Promise<string[]> {
    return parseAccounts(await this.run(["--mode", "account", "--op", "show"]));
  }

  /**
   * The target with the project's login parameters (iscsi/negotiation.ts), LUN 1 written through on the
   * backing store, the account bound, and the initiator name bound last: a target without an ACL admits
   * nobody, so a creation that stops half way never leaves a target open to anyone or open without CHAP (the
   * agent's next pass deletes and recreates it). tgtadm cannot show or
   * change an account's password and refuses to make an account that exists, so an account of the same user
   * is deleted first (that unbinds it from any target) and made again with this password.
   */
  async create(spec: TgtExport): Promise<void> {
    const tid = String(spec.tid);
    await this.run(["--mode", "target", "--op", "new", "--tid", tid, "--targetname", spec.iqn]);
    for (const [name, value] of TARGET_SESSION_PARAMETERS)
      await this.run(["--mode", "target", "--op", "update", "--tid", tid, "--name", name, "--value", value]);
    await this.run([
      "--mode",
      "logicalunit",
      "--op",
      "new",
      "--tid",
      tid,
      "--lun",
      "1",
      "--backing-store",
      spec.backingStore,
      "--bsoflags",
      WRITE_THROUGH_FLAG,
    ]);
    await this.createAccount(spec.user, spec.password);
    await this.run(["--mode", "account", "--op", "bind", "--tid", tid, "--user", spec.user]);
    await this.run([
      "--mode",
      "target",
      "--op",
      "bind",
      "--tid",
      tid,
      "--initiator-name",
      spec.initiatorName,
    ]);
  }

  /**
   * Opens the LUN's backing store again, so tgtd serves the size it has now: tgtd reads a backing store's size
   * only when it opens it, and `path=` is the one update that opens it again (it needs `online=0` first,
   * which for a disk does not stop its I/O). The reopen does not wait for the I/O its threads hold, so it is
   * safe only while no initiator is logged in: the caller checks that (docs/adr/0041-a-grown-replica-is-reopened-by-tgt-while-no.md).
   */
  async reopen(tid: number, lun: number, backingStore: string): Promise<void> {
    if (backingStore.includes(","))
      throw new Error(
        `LUN ${lun} of target ${tid}: backing store ${backingStore} holds a comma, which tgtd cannot take`,
      );
    await this.run([
      "--mode",
      "logicalunit",
      "--op",
      "update",
      "--tid",
      String(tid),
      "--lun",
      String(lun),
      "--params",
      `online=0,path=${backingStore}`,
    ]);
  }

  /** --force: a target with initiators logged in is removed too (their sessions end). */
  async delete(tid: number): Promise<void> {
    await this.run(["--mode", "target", "--op", "delete", "--force", "--tid", String(tid)]);
  }

  /**
   * A CHAP account, made again if one of the same user exists (which unbinds it from its targets). tgtd reads
   * both as comma-separated parameters, so neither may hold a comma (a volume's user and hex password do not).
   */
  async createAccount(user: string, password: string): Promise<void> {
    for (const [what, value] of [
      ["user", user],
      ["password", password],
    ]) {
      if (value === "" || value.includes(","))
        throw new Error(
          `CHAP account ${JSON.stringify(user)}: its ${what} is empty or holds a comma, which tgtd cannot take`,
        );
    }
    if ((await this.accounts()).includes(user)) await this.deleteAccount(user);
    await this.run(["--mode", "account", "--op", "new", "--user", user, "--password", password], password);
  }

  /** Deletes the account everywhere: tgtd unbinds it from every target that holds it. */
  async deleteAccount(user: string): Promise<void> {
    await this.run(["--mode", "account", "--op", "delete", "--user", user]);
  }
}

/** A failed command's error (whose message quotes its command line) with `secret` replaced in the message. */
export function withoutSecret(error: Error, secret: string): Error {
  return new Error(error.message.replaceAll(secret, "<password>"));
}

const TARGET_LINE = /^Target (\d+): (\S+)$/;
const LUN_LINE = /^\s+LUN: (\d+)$/;
const BACKING_LINE = /^\s+Backing store path: (.*)$/;
const FLAGS_LINE = /^\s+Backing store flags:(.*)$/;
const SIZE_LINE = /^\s+Size: (\d+) MB,/;
const INITIATOR_LINE = /^Initiator: (\S+)/;
const OUTGOING = " (outgoing)";

/**
 * `tgtadm --lld iscsi --mode target --op show`: each target, its LUNs' backing stores and flags, its ACL and
 * its accounts. A target's sections start at 4 spaces, their entries are deeper.
 */
export function parseTargets(text: string): TgtTarget[] {
  const targets: TgtTarget[] = [];
  let target: TgtTarget | undefined;
  let lun: LunBeingRead | undefined;
  let section = "";
  for (const line of text.split("\n")) {
    const head = TARGET_LINE.exec(line);
    if (head) {
      target = { tid: Number(head[1]), iqn: head[2], luns: {}, acl: [], accounts: [], loggedIn: [] };
      targets.push(target);
      lun = undefined;
      section = "";
      continue;
    }
    if (!target) {
      if (line.trim() !== "")
        throw new Error(`unreadable tgtadm output: ${JSON.stringify(line.slice(0, 200))} before any target`);
      continue;
    }
    if (/^ {4}\S/.test(line)) {
      section = line.trim();
      continue;
    }
    const entry = line.trim();
    if (entry === "") continue;
    if (section === "ACL information:") target.acl.push(entry);
    else if (section === "Account information:" && !entry.endsWith(OUTGOING)) target.accounts.push(entry);
    else if (section === "LUN information:") lun = readLunLine(line, lun, target);
    else if (section === "I_T nexus information:") readNexusLine(entry, target);
  }
  return targets;
}

/** The LUN whose lines are being read: its number, and its size until its backing store line comes. */
interface LunBeingRead {
  lun: number;
  shownMegabytes?: number;
}

/** One line of a LUN section; returns the LUN the following lines belong to. */
function readLunLine(
  line: string,
  lun: LunBeingRead | undefined,
  target: TgtTarget,
): LunBeingRead | undefined {
  const lunLine = LUN_LINE.exec(line);
  if (lunLine) return { lun: Number(lunLine[1]) };
  if (lun === undefined) return lun;
  const size = SIZE_LINE.exec(line);
  if (size) return { ...lun, shownMegabytes: Number(size[1]) };
  const backing = BACKING_LINE.exec(line);
  if (backing && backing[1] !== "None") {
    target.luns[lun.lun] = { backingStore: backing[1], flags: [] };
    if (lun.shownMegabytes !== undefined) target.luns[lun.lun].shownMegabytes = lun.shownMegabytes;
  }
  const flags = FLAGS_LINE.exec(line);
  if (flags && target.luns[lun.lun]) target.luns[lun.lun].flags = flags[1].trim().split(":").filter(Boolean);
  return lun;
}

/** "Initiator: <name> alias: <alias>" of an I_T nexus: that initiator is logged in. */
function readNexusLine(entry: string, target: TgtTarget): void {
  const initiator = INITIATOR_LINE.exec(entry)?.[1];
  if (initiator && !target.loggedIn.includes(initiator)) target.loggedIn.push(initiator);
}

/**
 * What `tgtadm --op show` prints as a LUN's "Size: N MB" for a backing store of `bytes`: tgtd's own rounding
 * (print_disksize in usr/target.c, about 10^6 bytes a megabyte), so a size can be compared with what it shows.
 */
export function tgtShownMegabytes(bytes: number): number {
  const sectors = Math.floor(bytes / 512);
  return Math.floor((sectors - (Math.floor(sectors / 625) - 974)) / 1950);
}

/** `tgtadm --lld iscsi --mode account --op show`: "Account list:" and one user per line. */
export function parseAccounts(text: string): string[] {
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  if (lines.length > 0 && lines[0].trim() !== "Account list:")
    throw new Error(`unreadable tgtadm account list: ${JSON.stringify(lines[0].slice(0, 200))}`);
  return lines.slice(1).map((l) => l.trim());
}
