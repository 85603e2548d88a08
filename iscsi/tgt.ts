// tgt (Linux SCSI target framework) as the agent drives it: tgtadm through the one command runner, argv arrays
// only, against the tgtd of the pod (its control port picks the socket). Parsing is pure and separate.
import type { Runner } from "../process/runner.js";

export interface TgtTarget {
  tid: number;
  iqn: string;
  /** Backing store path by LUN number (LUN 0 is tgt's own controller, with none). */
  luns: Record<number, string>;
  /** Initiator addresses or names bound to the target; "ALL" lets any initiator log in. */
  acl: string[];
}

const TIMEOUT = { timeoutMs: 30_000 };

export class Tgt {
  constructor(
    private readonly runner: Runner,
    /** ["tgtadm", "-C", "<control port>"] */
    private readonly tgtadm: readonly string[],
  ) {}

  private async run(args: string[]): Promise<string> {
    return (await this.runner.run([...this.tgtadm, "--lld", "iscsi", ...args], TIMEOUT)).stdout;
  }

  async targets(): Promise<TgtTarget[]> {
    return parseTargets(await this.run(["--mode", "target", "--op", "show"]));
  }

  /** A target with one LUN (1) on the backing store, open to every initiator. */
  async create(tid: number, iqn: string, backingStore: string): Promise<void> {
    await this.run(["--mode", "target", "--op", "new", "--tid", String(tid), "--targetname", iqn]);
    await this.run([
      "--mode",
      "logicalunit",
      "--op",
      "new",
      "--tid",
      String(tid),
      "--lun",
      "1",
      "--backing-store",
      backingStore,
    ]);
    await this.run(["--mode", "target", "--op", "bind", "--tid", String(tid), "--initiator-address", "ALL"]);
  }

  /** --force: a target with initiators logged in is removed too (their sessions end). */
  async delete(tid: number): Promise<void> {
    await this.run(["--mode", "target", "--op", "delete", "--force", "--tid", String(tid)]);
  }
}

const TARGET_LINE = /^Target (\d+): (\S+)$/;
const LUN_LINE = /^\s+LUN: (\d+)$/;
const BACKING_LINE = /^\s+Backing store path: (.*)$/;

/** `tgtadm --lld iscsi --mode target --op show`: each target, its LUNs' backing stores and its ACL. */
export function parseTargets(text: string): TgtTarget[] {
  const targets: TgtTarget[] = [];
  let target: TgtTarget | undefined;
  let lun: number | undefined;
  let inAcl = false;
  for (const line of text.split("\n")) {
    const head = TARGET_LINE.exec(line);
    if (head) {
      target = { tid: Number(head[1]), iqn: head[2], luns: {}, acl: [] };
      targets.push(target);
      lun = undefined;
      inAcl = false;
      continue;
    }
    if (!target) {
      if (line.trim() !== "")
        throw new Error(`unreadable tgtadm output: ${JSON.stringify(line.slice(0, 200))} before any target`);
      continue;
    }
    if (/^ {4}\S/.test(line)) inAcl = line.trim() === "ACL information:";
    else if (inAcl && line.trim() !== "") target.acl.push(line.trim());
    const lunLine = LUN_LINE.exec(line);
    if (lunLine) lun = Number(lunLine[1]);
    const backing = BACKING_LINE.exec(line);
    if (backing && lun !== undefined && backing[1] !== "None") target.luns[lun] = backing[1];
  }
  return targets;
}
