// LIO, the kernel's iSCSI target, as the volume target serves its array
// (docs/adr/0039-the-volume-target-md-raid1-served-by-lio.md): configfs written directly with node:fs (no
// targetcli, no fork). LIO's tree is host-wide, so this touches only the entries under one target IQN and one
// iblock backstore: data LUN 0, TPG 1, the portal, one explicit ACL per initiator with CHAP. Creation goes
// backstore, TPG, LUN, portal, ACLs, attributes and login parameters, enable last; removal goes the other way.
import {
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  rmdir,
  symlink,
  unlink,
  writeFile,
} from "node:fs/promises";
import { basename, join } from "node:path";
import { TARGET_SESSION_PARAMETERS } from "./negotiation.js";

export interface LioAcl {
  initiatorIqn: string;
  user: string;
  password: string;
  /** The mapped LUN refuses writes (DATA PROTECT) while sessions stay logged in. */
  writeProtect: boolean;
}

export interface LioExport {
  targetIqn: string;
  /** The iblock backstore's name (core/iblock_0/<backstore>): unique on the node, e.g. from the volume. */
  backstore: string;
  /** The block device served as LUN 0: "/dev/md127". */
  device: string;
  /** "ip:port" LIO listens on, in the network namespace of the process that creates it; "0.0.0.0:3260" works. */
  portal: string;
  acls: LioAcl[];
}

export interface LioState {
  targetIqn: string;
  enabled: boolean;
  /** The backstore LUN 0 serves, and its device. */
  backstore?: string;
  device?: string;
  portals: string[];
  acls: { initiatorIqn: string; writeProtect: boolean }[];
}

const TPG = "tpgt_1";
const LUN = "lun_0";
const HBA = "iblock_0";
/** The name of the link from an ACL's mapped LUN to the TPG's LUN (any name works; targetcli uses a hash). */
const MAP_LINK = "map";

/**
 * How long LIO waits for the data of a write it asked for before it closes the initiator's connection (its
 * default is 3 s, LIO allows 2 to 60). A busy application node missed 3 s in the data-path test, mid-write, and
 * the reconnect cost far more than the wait.
 */
export const DATAOUT_TIMEOUT_SECONDS = 15;

export class Lio {
  constructor(private readonly root = "/sys/kernel/config/target") {}

  private tpg(targetIqn: string): string {
    return join(this.root, "iscsi", targetIqn, TPG);
  }

  private backstoreDir(backstore: string): string {
    return join(this.root, "core", HBA, backstore);
  }

  /** What LIO holds for `targetIqn`, or undefined when it has no such target. */
  async read(targetIqn: string): Promise<LioState | undefined> {
    checkIqn(targetIqn, "targetIqn");
    const tpg = this.tpg(targetIqn);
    const enable = await readText(join(tpg, "enable"));
    if (enable === undefined) return undefined;
    const state: LioState = {
      targetIqn,
      enabled: enable.trim() === "1",
      portals: ((await list(join(tpg, "np"))) ?? []).sort(),
      acls: [],
    };
    const backstore = await this.lunBackstore(targetIqn);
    if (backstore) {
      state.backstore = backstore;
      const device = await this.backstoreDevice(backstore);
      if (device) state.device = device;
    }
    for (const initiatorIqn of ((await list(join(tpg, "acls"))) ?? []).sort()) {
      const wp = await readText(join(tpg, "acls", initiatorIqn, LUN, "write_protect"));
      state.acls.push({ initiatorIqn, writeProtect: wp?.trim() === "1" });
    }
    return state;
  }

  /** The device an iblock backstore opened (its info line "UDEV PATH: /dev/md127"), if it exists and has one. */
  private async backstoreDevice(backstore: string): Promise<string | undefined> {
    const info = await readText(join(this.backstoreDir(backstore), "info"));
    return info === undefined ? undefined : parseIblockDevice(info);
  }

  /** The iblock backstore linked from LUN 0 of the target, if any. */
  private async lunBackstore(targetIqn: string): Promise<string | undefined> {
    const lun = join(this.tpg(targetIqn), "lun", LUN);
    for (const entry of (await list(lun)) ?? []) {
      if (!(await lstat(join(lun, entry))).isSymbolicLink()) continue;
      const target = await readlink(join(lun, entry));
      if (basename(join(target, "..")) === HBA) return basename(target);
    }
    return undefined;
  }

  /**
   * Makes LIO serve `wanted` and nothing else under its IQN: creates what is missing, corrects what differs
   * (portals and ACLs not wanted are removed; another device means the target is rebuilt), enables the TPG
   * last. Idempotent: a second call with the same export writes nothing.
   */
  async ensure(wanted: LioExport): Promise<void> {
    checkExport(wanted);
    const tpg = this.tpg(wanted.targetIqn);
    const so = this.backstoreDir(wanted.backstore);
    const linked = await this.lunBackstore(wanted.targetIqn);
    const device = await this.backstoreDevice(wanted.backstore);
    if ((linked !== undefined && linked !== wanted.backstore) || (device && device !== wanted.device)) {
      await this.remove(wanted.targetIqn, wanted.backstore);
      if (linked && linked !== wanted.backstore) await this.removeBackstore(linked);
    }
    await this.ensureBackstore(so, wanted.device);
    await mkdir(join(tpg, "lun", LUN), { recursive: true });
    if ((await this.lunBackstore(wanted.targetIqn)) === undefined)
      await symlink(so, join(tpg, "lun", LUN, wanted.backstore));
    await this.ensurePortal(tpg, wanted.portal);
    await this.ensureAcls(tpg, wanted.acls);
    await writeIfDifferent(join(tpg, "attrib", "authentication"), "1");
    await writeIfDifferent(join(tpg, "attrib", "generate_node_acls"), "0");
    for (const [key, value] of TARGET_SESSION_PARAMETERS)
      await writeIfDifferent(join(tpg, "param", key), value);
    await writeIfDifferent(join(tpg, "enable"), "1");
  }

  private async ensureBackstore(so: string, device: string): Promise<void> {
    await mkdir(so, { recursive: true });
    if ((await readText(join(so, "enable")))?.trim() === "1") return;
    // control tells iblock which device to open; the udev_path attribute is what targetcli and others show.
    await writeFile(join(so, "control"), `udev_path=${device}`);
    await writeFile(join(so, "udev_path"), device);
    await writeFile(join(so, "enable"), "1");
  }

  private async ensurePortal(tpg: string, portal: string): Promise<void> {
    const np = join(tpg, "np");
    const present = (await list(np)) ?? [];
    for (const other of present.filter((p) => p !== portal)) await rmdir(join(np, other));
    if (!present.includes(portal)) await mkdir(join(np, portal));
  }

  private async ensureAcls(tpg: string, acls: LioAcl[]): Promise<void> {
    const dir = join(tpg, "acls");
    const wanted = new Set(acls.map((a) => a.initiatorIqn));
    for (const other of ((await list(dir)) ?? []).filter((a) => !wanted.has(a)))
      await removeAcl(join(dir, other));
    for (const acl of acls) {
      const aclDir = join(dir, acl.initiatorIqn);
      const mapped = join(aclDir, LUN);
      await mkdir(mapped, { recursive: true });
      if (!((await list(mapped)) ?? []).includes(MAP_LINK))
        await symlink(join(tpg, "lun", LUN), join(mapped, MAP_LINK));
      // LIO keeps a trailing newline as part of the CHAP name and secret: write them without one.
      await writeIfDifferent(join(aclDir, "auth", "userid"), acl.user);
      await writeIfDifferent(join(aclDir, "auth", "password"), acl.password);
      await writeIfDifferent(join(mapped, "write_protect"), acl.writeProtect ? "1" : "0");
      await writeIfDifferent(join(aclDir, "attrib", "dataout_timeout"), String(DATAOUT_TIMEOUT_SECONDS));
    }
  }

  /**
   * Turns the initiator's mapped LUN read-only (or writable again) while its sessions stay logged in: a write
   * that reaches LIO after this fails with DATA PROTECT (the initiator sees EREMOTEIO); reads go on.
   */
  async setWriteProtect(targetIqn: string, initiatorIqn: string, on: boolean): Promise<void> {
    checkIqn(targetIqn, "targetIqn");
    checkIqn(initiatorIqn, "initiatorIqn");
    const file = join(this.tpg(targetIqn), "acls", initiatorIqn, LUN, "write_protect");
    try {
      await writeFile(file, on ? "1" : "0");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      throw new Error(
        `LIO target ${targetIqn} has no ACL for initiator ${initiatorIqn}: ensure() the export with that ACL first`,
        { cause: error },
      );
    }
  }

  /**
   * Removes the target's entries and the backstore, in the reverse order of creation: disable, ACLs (their
   * sessions end), LUNs, portals, TPGs, the target, then the backstore. Idempotent; also clears what a
   * crashed target left behind.
   */
  async remove(targetIqn: string, backstore: string): Promise<void> {
    checkIqn(targetIqn, "targetIqn");
    checkBackstore(backstore);
    const target = join(this.root, "iscsi", targetIqn);
    for (const tpgName of ((await list(target)) ?? []).filter((e) => e.startsWith("tpgt_"))) {
      const tpg = join(target, tpgName);
      await writeFile(join(tpg, "enable"), "0").catch(ignoreMissing);
      for (const acl of (await list(join(tpg, "acls"))) ?? []) await removeAcl(join(tpg, "acls", acl));
      for (const lun of (await list(join(tpg, "lun"))) ?? []) await removeLinksAndDir(join(tpg, "lun", lun));
      for (const np of (await list(join(tpg, "np"))) ?? [])
        await rmdir(join(tpg, "np", np)).catch(ignoreMissing);
      await rmdir(tpg).catch(ignoreMissing);
    }
    await rmdir(target).catch(ignoreMissing);
    await this.removeBackstore(backstore);
  }

  private async removeBackstore(backstore: string): Promise<void> {
    // The HBA (core/iblock_0) is shared with the node's other targets and stays.
    await rmdir(this.backstoreDir(backstore)).catch(ignoreMissing);
  }
}

async function removeAcl(acl: string): Promise<void> {
  for (const entry of (await list(acl)) ?? [])
    if (/^lun_\d+$/.test(entry)) await removeLinksAndDir(join(acl, entry));
  await rmdir(acl).catch(ignoreMissing);
}

/** A configfs group holding symlinks: the links, then the group (its attribute files go with it). */
async function removeLinksAndDir(dir: string): Promise<void> {
  for (const entry of (await list(dir)) ?? []) {
    const stat = await lstat(join(dir, entry)).catch(ignoreMissing);
    if (stat?.isSymbolicLink()) await unlink(join(dir, entry)).catch(ignoreMissing);
  }
  await rmdir(dir).catch(ignoreMissing);
}

async function writeIfDifferent(file: string, value: string): Promise<void> {
  // configfs shows a value with one newline after it.
  if ((await readText(file)) === `${value}\n`) return;
  await writeFile(file, value);
}

const ignoreMissing = (error: NodeJS.ErrnoException): undefined => {
  if (error.code === "ENOENT") return undefined;
  throw error;
};

const readText = (file: string) => readFile(file, "utf8").catch(ignoreMissing);
const list = (dir: string) => readdir(dir).catch(ignoreMissing);

function checkIqn(iqn: string, what: string): void {
  if (
    !/^(iqn\.\d{4}-\d{2}\.[^\s/]+|eui\.[0-9A-Fa-f]{16}|naa\.[0-9A-Fa-f]{16,32})$/.test(iqn) ||
    iqn.length > 223
  )
    throw new Error(
      `${what} ${JSON.stringify(iqn)}: give an iSCSI name such as "iqn.2016-09.com.openebs.cstor:vol1"`,
    );
}

function checkBackstore(name: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name))
    throw new Error(`backstore ${JSON.stringify(name)}: use letters, digits, "_", "." and "-" (at most 64)`);
}

function checkExport(wanted: LioExport): void {
  checkIqn(wanted.targetIqn, "targetIqn");
  checkBackstore(wanted.backstore);
  if (!/^\/dev\/[^\s]+$/.test(wanted.device))
    throw new Error(
      `LIO export ${wanted.targetIqn}: device ${JSON.stringify(wanted.device)} must be a /dev path`,
    );
  if (!/^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]):\d{1,5}$/.test(wanted.portal))
    throw new Error(
      `LIO export ${wanted.targetIqn}: portal ${JSON.stringify(wanted.portal)} must be "ip:port", such as "0.0.0.0:3260"`,
    );
  const seen = new Set<string>();
  for (const acl of wanted.acls) {
    checkIqn(acl.initiatorIqn, `LIO export ${wanted.targetIqn}: acls[].initiatorIqn`);
    if (seen.has(acl.initiatorIqn))
      throw new Error(`LIO export ${wanted.targetIqn}: initiator ${acl.initiatorIqn} has two ACLs; give one`);
    seen.add(acl.initiatorIqn);
    // LIO's CHAP fields hold at most 255 characters; a newline would become part of them.
    for (const [field, value] of [
      ["user", acl.user],
      ["password", acl.password],
    ] as const)
      if (!value || value.length > 255 || /[\s]/.test(value))
        throw new Error(
          `LIO export ${wanted.targetIqn}: ACL ${acl.initiatorIqn}: CHAP ${field} must be 1 to 255 characters without white space`,
        );
  }
}

/** An iblock backstore's `info`: "... iBlock device: md127  UDEV PATH: /dev/md127  readonly: 0". */
export function parseIblockDevice(info: string): string | undefined {
  return /UDEV PATH: (\S+)/.exec(info)?.[1];
}
