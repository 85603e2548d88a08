// The data-path chaos run's blocks (docs/reliability.md, data-path scenario): what the writer in the application
// guest writes (block-writer.ts) and what the host finds when it reads the region back. Each 4 KiB block is
// stamped with (run, sequence number, block index) and filled deterministically from them, so one read tells
// which write a block holds and whether it holds all of it (a torn block matches no stamp's fill).
import { createHash } from "node:crypto";
import { Prng } from "./prng.js";

export const BLOCK_BYTES = 4096;
const MAGIC = Buffer.from("CSTORCHW", "latin1");
const HEADER_BYTES = 24;

export interface Stamp {
  run: number;
  seq: number;
  block: number;
}

/** The whole block written as `stamp`: the magic, the stamp, then words drawn from a generator seeded by it. */
export function blockData(stamp: Stamp): Buffer {
  const data = Buffer.alloc(BLOCK_BYTES);
  MAGIC.copy(data, 0);
  data.writeUInt32LE(stamp.run, 8);
  data.writeUInt32LE(stamp.seq, 12);
  data.writeUInt32LE(stamp.block, 16);
  const fill = new Prng(Math.imul(stamp.run, 0x9e3779b1) ^ Math.imul(stamp.seq, 0x85ebca6b) ^ stamp.block);
  for (let at = HEADER_BYTES; at < BLOCK_BYTES; at += 4)
    data.writeUInt32LE(Math.floor(fill.next() * 0x1_0000_0000), at);
  return data;
}

/** The stamp a block claims to hold, or undefined for a block no writer of this kind wrote (zeros, say). */
export function stampOf(data: Buffer): Stamp | undefined {
  if (!data.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  return { run: data.readUInt32LE(8), seq: data.readUInt32LE(12), block: data.readUInt32LE(16) };
}

/** The checksum the writer reports per write: sha256 of the block, hex. */
export const blockSum = (data: Buffer) => createHash("sha256").update(data).digest("hex");

/** One line of the writer's output: an acknowledged (A) or failed (F) write, with its guest clock times. */
export interface WriteRecord {
  acknowledged: boolean;
  seq: number;
  block: number;
  startedMs: number;
  endedMs: number;
  /** A: the block's sha256; F: the error code. */
  detail: string;
}

export function writeLine(record: WriteRecord): string {
  const { acknowledged, seq, block, startedMs, endedMs, detail } = record;
  return `${acknowledged ? "A" : "F"} ${seq} ${block} ${startedMs} ${endedMs} ${detail}\n`;
}

/** The writer's records in its output (other lines, such as its start line, are skipped). */
export function parseWrites(output: string): WriteRecord[] {
  const records: WriteRecord[] = [];
  for (const line of output.split("\n")) {
    const fields = line.split(" ");
    if (fields.length !== 6 || (fields[0] !== "A" && fields[0] !== "F")) continue;
    records.push({
      acknowledged: fields[0] === "A",
      seq: Number(fields[1]),
      block: Number(fields[2]),
      startedMs: Number(fields[3]),
      endedMs: Number(fields[4]),
      detail: fields[5],
    });
  }
  return records;
}

/** What the writer had reported when a read began, and what it has reported once the read ended. */
export interface ReadWindow {
  before: WriteRecord[];
  after: WriteRecord[];
}

/**
 * Checks a region read back in run `run`: every block holds its last write acknowledged before the read began,
 * or a later write attempted on it (failed, acknowledged during the read, or still in flight), never an older
 * one, never a torn one, never another block's. A block with no acknowledged write in this run may still hold
 * an earlier run's (whole) block or none. Returns the problems, one line each.
 */
export function checkRegion(image: Buffer, run: number, window: ReadWindow): string[] {
  const lastAcked = new Map<number, WriteRecord>();
  for (const w of window.before) if (w.acknowledged) lastAcked.set(w.block, w);
  const attempted = new Map<number, Set<number>>();
  for (const w of window.after) attempted.set(w.block, (attempted.get(w.block) ?? new Set()).add(w.seq));
  const reported = window.after.at(-1)?.seq ?? -1;
  const sums = new Map(window.after.filter((w) => w.acknowledged).map((w) => [w.seq, w.detail]));
  const problems: string[] = [];
  for (let block = 0; block * BLOCK_BYTES < image.length; block++) {
    const data = image.subarray(block * BLOCK_BYTES, (block + 1) * BLOCK_BYTES);
    const stamp = stampOf(data);
    const acked = lastAcked.get(block);
    const problem = blockProblem({ block, data, stamp, acked, run, attempted, reported, sums });
    if (problem) problems.push(`block ${block}: ${problem}`);
  }
  return problems;
}

function blockProblem(input: {
  block: number;
  data: Buffer;
  stamp: Stamp | undefined;
  acked: WriteRecord | undefined;
  run: number;
  attempted: Map<number, Set<number>>;
  reported: number;
  sums: Map<number, string>;
}): string | undefined {
  const { block, data, stamp, acked, run, attempted, reported, sums } = input;
  const expected = acked ? `acknowledged write ${acked.seq} or a later one` : "no acknowledged write yet";
  if (!stamp || stamp.run !== run) {
    if (!acked) return stamp && !data.equals(blockData(stamp)) ? "torn (an earlier run's block)" : undefined;
    return `holds ${stamp ? `run ${stamp.run}'s write ${stamp.seq}` : "no write"}; expected ${expected}`;
  }
  if (stamp.block !== block) return `holds block ${stamp.block}'s write ${stamp.seq} (misplaced)`;
  if (!data.equals(blockData(stamp))) return `torn: stamped write ${stamp.seq}, its data differs`;
  if (acked && stamp.seq < acked.seq) return `holds write ${stamp.seq}, older than ${expected}`;
  // The writer writes one block at a time: the one after its last report may be in flight.
  const inFlight = stamp.seq === reported + 1;
  if (!inFlight && !attempted.get(block)?.has(stamp.seq))
    return `holds write ${stamp.seq}, which the writer never reported on this block`;
  const sum = sums.get(stamp.seq);
  if (sum !== undefined && sum !== blockSum(data)) return `write ${stamp.seq}'s checksum differs`;
  return undefined;
}

/** What a snapshot's image of the region holds: the writer's state at one instant, and what contradicts it. */
export interface InstantCheck {
  /** The highest sequence number of run `run` in the image: the last write before the snapshot's instant. */
  instant: number;
  problems: string[];
}

/**
 * Checks a snapshot's image of the region (docs/adr/0050-a-snapshot-is-taken-while-md-holds-the-volumes-writes.md)
 * against every write the writer reported: there must be one instant, the highest write found, such that every
 * block holds whole the last write on it at or before that instant, or no write of this run when none came
 * before it. A block holding an older write lost one from before the instant; any write after it would be the
 * highest found. Returns the instant and the problems, one line each.
 */
export function checkSnapshotInstant(
  image: Buffer,
  run: number,
  writes: readonly WriteRecord[],
): InstantCheck {
  const blocks = Math.floor(image.length / BLOCK_BYTES);
  const blockAt = (block: number) => image.subarray(block * BLOCK_BYTES, (block + 1) * BLOCK_BYTES);
  let instant = 0;
  for (let block = 0; block < blocks; block++) {
    const stamp = stampOf(blockAt(block));
    if (stamp?.run === run) instant = Math.max(instant, stamp.seq);
  }
  const lastBefore = new Map<number, number>();
  for (const w of writes)
    if (w.seq <= instant) lastBefore.set(w.block, Math.max(w.seq, lastBefore.get(w.block) ?? 0));
  const problems: string[] = [];
  for (let block = 0; block < blocks; block++) {
    const data = blockAt(block);
    const stamp = stampOf(data);
    const expected = lastBefore.get(block);
    const ours = stamp?.run === run;
    if (expected === undefined ? !ours : data.equals(blockData({ run, seq: expected, block }))) continue;
    const torn = stamp && !data.equals(blockData(stamp)) ? " (torn)" : "";
    const holds = stamp ? `run ${stamp.run}'s write ${stamp.seq} to block ${stamp.block}${torn}` : "no write";
    problems.push(
      expected === undefined
        ? `block ${block}: holds ${holds}, which the writer never reported there`
        : `block ${block}: holds ${holds}; expected write ${expected}, its last at or before instant ${instant}`,
    );
  }
  return { instant, problems };
}
