// The data-path chaos run's writer (docs/reliability.md, data-path scenario), run by node in the application
// guest: 4 KiB blocks written, one at a time, to the volume's raw LUN, opened O_DSYNC so that a write returns
// only once the target acknowledged it (and the target acknowledges once md wrote the legs). Blocks are picked
// at random in a region of a few MiB, so every block is overwritten again and again. One line per write on
// stdout (blocks.ts writeLine): acknowledged with the block's sha256, or failed with the error; stdout is a file
// on hostfs (testkit/uml/guest-process.ts), which the host reads as it grows.
//   node block-writer.js DEVICE RUN BLOCKS
import { closeSync, constants, openSync, writeSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { BLOCK_BYTES, blockData, blockSum, writeLine } from "./blocks.js";
import { Prng } from "./prng.js";

/** After a failed write (a read-only volume refuses at once): the pause before the next, to keep the log short. */
const AFTER_FAILURE_MS = 250;

const [device, runArg, blocksArg] = process.argv.slice(2);
const run = Number(runArg);
const blocks = Number(blocksArg);
if (
  !device?.startsWith("/dev/") ||
  !Number.isInteger(run) ||
  run < 0 ||
  !Number.isInteger(blocks) ||
  blocks < 1
) {
  process.stderr.write(
    `usage: block-writer DEVICE RUN BLOCKS (a /dev/ path, a run number >= 0, a block count >= 1); got ${JSON.stringify(process.argv.slice(2))}\n`,
  );
  process.exit(2);
}

let stopping = false;
process.on("SIGTERM", () => (stopping = true));

const fd = openSync(device, constants.O_WRONLY | constants.O_DSYNC);
const pick = new Prng(run);
process.stdout.write(`writer started: run ${run}, ${blocks} blocks of ${BLOCK_BYTES} bytes on ${device}\n`);
for (let seq = 1; !stopping; seq++) {
  const block = Math.floor(pick.next() * blocks);
  const data = blockData({ run, seq, block });
  const startedMs = Date.now();
  let detail: string;
  let acknowledged = true;
  try {
    writeSync(fd, data, 0, BLOCK_BYTES, block * BLOCK_BYTES);
    detail = blockSum(data);
  } catch (error) {
    acknowledged = false;
    detail = (error as NodeJS.ErrnoException).code ?? "error";
  }
  process.stdout.write(writeLine({ acknowledged, seq, block, startedMs, endedMs: Date.now(), detail }));
  // A turn of the event loop per write, so that SIGTERM is seen.
  await sleep(acknowledged ? 0 : AFTER_FAILURE_MS);
}
closeSync(fd);
