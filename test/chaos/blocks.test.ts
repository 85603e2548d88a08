// The data-path chaos run's judge of a region read back (blocks.ts): what it accepts (the last acknowledged
// write, a later attempted or in-flight one, an untouched block) and what it reports (an older write, a torn
// block, a misplaced one, one the writer never attempted there).
import { expect } from "chai";
import {
  BLOCK_BYTES,
  blockData,
  blockSum,
  checkRegion,
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
});
