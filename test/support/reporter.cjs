// mocha's spec output, then the files that took longest (CI's time is bounded: this says where it goes), then
// the one summary line CI reads: "N passed, N failed".
"use strict";
const Mocha = require("mocha");
const { relative } = require("node:path");

const SLOWEST_SHOWN = 15;

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const { EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_RUN_END } = Mocha.Runner.constants;
    const startedAt = new Map();
    const seconds = new Map();
    // A top-level suite is one file's describe: its wall time includes its before/after hooks (booting guests).
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.parent?.root) startedAt.set(suite, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      if (!startedAt.has(suite)) return;
      const file = suite.file ? relative(process.cwd(), suite.file) : suite.title;
      seconds.set(file, (seconds.get(file) ?? 0) + (Date.now() - startedAt.get(suite)) / 1000);
    });
    runner.once(EVENT_RUN_END, () => {
      const slowest = [...seconds].sort((a, b) => b[1] - a[1]).slice(0, SLOWEST_SHOWN);
      process.stdout.write(`\nslowest files (wall seconds):\n`);
      for (const [file, s] of slowest) process.stdout.write(`  ${s.toFixed(0).padStart(5)}  ${file}\n`);
      const { passes, failures } = runner.stats;
      process.stdout.write(`\n${passes} passed, ${failures} failed\n`);
    });
  }
}

module.exports = SummaryReporter;
