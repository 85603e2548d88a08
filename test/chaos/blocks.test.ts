// The data-path chaos run's judge of a region read back (blocks.ts): what it accepts (the last acknowledged
// write, a later attempted or in-flight one, an untouched block) and what it reports (an older write, a torn
// block, a misplaced one, one the writer never attempted there); and of a snapshot's image, that it holds the
// writes up to one instant and none after.
import { expect } from "chai";
import {
  BLOCK_BYTES,
  blockData,
  blockSum,
  checkRegion,
  checkSnapshotInstant,
  parseWrites,
  stampOf,
  writeLine,
  type WriteRecord,
} from "./blocks.js";

const RUN = 7;
const write = (seq: number, block: number, acknowledged = true): WriteRecord => ({
  acknowledged,
  seq,
  block,
  startedMs: seq * 10,
  endedMs: seq * 10 + 5,
  detail: acknowledged ? blockSum(blockData({ run: RUN, seq, block })) : "EIO",
});
/** A region of `blocks` blocks holding, per block, the given write's data (or zeros). */
const region = (blocks: number, holds: Record<number, Buffer>) => {
  const image = Buffer.alloc(blocks * BLOCK_BYTES);
  for (const [block, data] of Object.entries(holds)) data.copy(image, Number(block) * BLOCK_BYTES);
  return image;
};
const data = (seq: number, block: number, run = RUN) => blockData({ run, seq, block });

describe("chaos data path: checking a region read back", () => {
  it("stamps each block with its run, sequence and index, and fills it deterministically", () => {
    expect(stampOf(data(3, 2))).to.deep.equal({ run: RUN, seq: 3, block: 2 });
    expect(data(3, 2).equals(data(3, 2))).to.equal(true);
    expect(data(3, 2).subarray(24).equals(data(4, 2).subarray(24))).to.equal(false);
    expect(stampOf(Buffer.alloc(BLOCK_BYTES))).to.equal(undefined);
  });

  it("reads the writer's lines back, skipping others", () => {
    const records = [write(1, 0), write(2, 1, false)];
    expect(parseWrites(`writer started: run 7\n${records.map(writeLine).join("")}`)).to.deep.equal(records);
  });

  it("accepts the last acknowledged write, a later failed or in-flight one, and blocks never written", () => {
    const before = [write(1, 0), write(2, 1), write(3, 1)];
    const after = [...before, write(4, 0, false), write(5, 2)];
    const image = region(4, { 0: data(4, 0), 1: data(3, 1), 2: data(6, 2), 3: data(9, 3, RUN - 1) });
    expect(checkRegion(image, RUN, { before, after })).to.deep.equal([]);
  });

  it("reports an older write than the last acknowledged, a torn block, a misplaced one and one never attempted there", () => {
    const before = [write(1, 0), write(2, 0), write(3, 1), write(4, 2)];
    const torn = Buffer.from(data(3, 1));
    torn.fill(0, 2048);
    const after = [...before, write(5, 3)];
    const image = region(4, { 0: data(1, 0), 1: torn, 2: data(5, 3), 3: data(4, 3) });
    expect(checkRegion(image, RUN, { before, after })).to.deep.equal([
      "block 0: holds write 1, older than acknowledged write 2 or a later one",
      "block 1: torn: stamped write 3, its data differs",
      "block 2: holds block 3's write 5 (misplaced)",
      "block 3: holds write 4, which the writer never reported on this block",
    ]);
  });

  it("reports a block that lost its acknowledged write to zeros or to an earlier run's data", () => {
    const before = [write(1, 0), write(2, 1)];
    const image = region(2, { 1: data(8, 1, RUN - 1) });
    expect(checkRegion(image, RUN, { before, after: before })).to.deep.equal([
      "block 0: holds no write; expected acknowledged write 1 or a later one",
      "block 1: holds run 6's write 8; expected acknowledged write 2 or a later one",
    ]);
  });

  describe("a snapshot's image: the writes up to one instant", () => {
    const log = [write(1, 0), write(2, 1), write(3, 0), write(4, 2), write(5, 1), write(6, 3)];

    it("finds the instant, the highest write held, when every block holds its last write up to it", () => {
      // Writes 1-4 before the instant; 5 and 6 after: block 1 still holds 2, block 3 its earlier contents.
      const image = region(4, { 0: data(3, 0), 1: data(2, 1), 2: data(4, 2), 3: data(9, 3, RUN - 1) });
      expect(checkSnapshotInstant(image, RUN, log)).to.deep.equal({ instant: 4, problems: [] });
    });

    it("reports a block that misses a write from before the instant, a torn one and one never written there", () => {
      const torn = Buffer.from(data(4, 2));
      torn.fill(0, 2048);
      // Write 5 is found, so block 0 must hold 3 and block 1 must hold 5; block 3 holds a write of block 2.
      const image = region(4, { 0: data(1, 0), 1: data(5, 1), 2: torn, 3: data(4, 2) });
      expect(checkSnapshotInstant(image, RUN, log)).to.deep.equal({
        instant: 5,
        problems: [
          "block 0: holds run 7's write 1 to block 0; expected write 3, its last at or before instant 5",
          "block 2: holds run 7's write 4 to block 2 (torn); expected write 4, its last at or before instant 5",
          "block 3: holds run 7's write 4 to block 2, which the writer never reported there",
        ],
      });
    });

    it("reports a block holding no write where one came before the instant", () => {
      const image = region(3, { 1: data(2, 1), 2: data(4, 2) });
      expect(checkSnapshotInstant(image, RUN, log).problems).to.deep.equal([
        "block 0: holds no write; expected write 3, its last at or before instant 4",
      ]);
    });
  });
});
