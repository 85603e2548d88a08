// An iSCSI initiator from this host without the kernel's iSCSI: libiscsi's tools (Debian's libiscsi-bin and
// qemu-utils), which log in with a chosen initiator name and CHAP account, as a volume target logs in to a
// replica export (lib/volume/iqn.ts targetInitiatorIqn, lib/volume/chap.ts volumeChap).
import { runProgram, type RunResult } from "./installed.js";

export interface Login {
  /** host:port */
  portal: string;
  /** The target's name. */
  iqn: string;
  /** The initiator name to log in with. */
  initiator: string;
  /** CHAP; without it, no CHAP is offered. */
  user?: string;
  password?: string;
}

/** libiscsi's message when the target refuses the CHAP response. */
export const AUTHENTICATION_FAILURE = /Authentication failure\(513\)/;
/** libiscsi's message when tgtd hides the target from an initiator its ACL does not admit. */
export const TARGET_NOT_FOUND = /Target not found\(515\)/;

/**
 * `iscsi-inq` on LUN 1: a login, then SCSI INQUIRY. The password reaches libiscsi through its environment
 * (LIBISCSI_CHAP_PASSWORD), not the command line.
 */
export function inquiry(login: Login): Promise<RunResult> {
  return libiscsi("iscsi-inq", login);
}

/** `iscsi-readcapacity16 -s` on LUN 1: the size in bytes the target reports (READ CAPACITY 16). */
export async function lunSize(login: Login): Promise<number> {
  const result = await libiscsi("iscsi-readcapacity16", login, ["-s"]);
  if (result.code !== 0 || !/^\d+\s*$/.test(result.stdout))
    throw new Error(`iscsi-readcapacity16: ${result.stderr || result.stdout}`);
  return Number(result.stdout.trim());
}

function libiscsi(program: string, login: Login, args: string[] = []): Promise<RunResult> {
  const user = login.user === undefined ? "" : `${login.user}@`;
  const env = { ...process.env, ...(login.password ? { LIBISCSI_CHAP_PASSWORD: login.password } : {}) };
  const url = `iscsi://${user}${login.portal}/${login.iqn}/1`;
  return runProgram(program, [...args, "-i", login.initiator, url], {
    env,
    timeout: 30_000,
    killSignal: "SIGKILL",
  });
}

/** Logged in to LUN 1 for `ms` (qemu-io's sleep), as a volume target's leg is: resolves when it logs out. */
export function holdLogin(login: Login, ms: number): Promise<RunResult> {
  const { object, image } = qemuImageOpts(login);
  return runProgram("qemu-io", [...object, "--image-opts", image, "-c", `sleep ${ms}`], {
    timeout: ms + 30_000,
    killSignal: "SIGKILL",
  });
}

/** qemu-img's --image-opts (or --target-image-opts) for LUN 1 and its --object holding the password. */
export function qemuImageOpts(login: Login): { object: string[]; image: string } {
  const chap = login.user === undefined ? "" : `,user=${login.user},password-secret=chap`;
  return {
    object: login.password === undefined ? [] : ["--object", `secret,id=chap,data=${login.password}`],
    image: `driver=iscsi,transport=tcp,portal=${login.portal},target=${login.iqn},lun=1,initiator-name=${login.initiator}${chap}`,
  };
}

/** Copies `file` onto LUN 1 (its size, from offset 0). */
export async function writeLun(login: Login, file: string): Promise<void> {
  const { object, image } = qemuImageOpts(login);
  await qemuImg("convert", "-n", "-f", "raw", ...object, "--target-image-opts", file, image);
}

/** Copies LUN 1 whole into `file`. */
export async function readLun(login: Login, file: string): Promise<void> {
  const { object, image } = qemuImageOpts(login);
  await qemuImg("convert", ...object, "--image-opts", image, "-O", "raw", file);
}

async function qemuImg(...args: string[]): Promise<void> {
  const result = await runProgram("qemu-img", args, { timeout: 60_000, killSignal: "SIGKILL" });
  if (result.code !== 0) throw new Error(`qemu-img ${args[0]}: ${result.stderr}`);
}
