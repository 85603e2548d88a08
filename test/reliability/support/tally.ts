// Figures of a reliability run (fuzz cases, faults injected, bad inputs tried, data lost), kept as the tests
// run. With RELIABILITY_REPORT=<file> they are written there as JSON after every update, which is where the
// figures in docs/reliability.md come from; without it nothing is written, so `npm test` leaves no files.
import { writeFileSync } from "node:fs";

interface Figures {
  fuzz: Record<string, { cases: number; byStatus: Record<string, number> }>;
  faults: Record<string, { injected: number; survived: number }>;
  badInputs: Record<string, number>;
  /** Files written into pools before a fault whose sha256 was checked after it, and how many had changed. */
  dataChecked: number;
  dataLost: number;
  /** Peak RSS (MiB) of a server process under a load, from /proc. */
  peakRssMiB: Record<string, number>;
}

const figures: Figures = { fuzz: {}, faults: {}, badInputs: {}, dataChecked: 0, dataLost: 0, peakRssMiB: {} };

function save(): void {
  const file = process.env.RELIABILITY_REPORT;
  if (file) writeFileSync(file, JSON.stringify(figures, null, 2) + "\n");
}

export const tally = {
  fuzz(endpoint: string, cases: number, codes: ReadonlyMap<number, number>): void {
    const entry = (figures.fuzz[endpoint] ??= { cases: 0, byStatus: {} });
    entry.cases += cases;
    for (const [code, n] of codes) entry.byStatus[code] = (entry.byStatus[code] ?? 0) + n;
    save();
  },
  fault(name: string, survived: boolean): void {
    const entry = (figures.faults[name] ??= { injected: 0, survived: 0 });
    entry.injected += 1;
    if (survived) entry.survived += 1;
    save();
  },
  badInputs(area: string, count: number): void {
    figures.badInputs[area] = (figures.badInputs[area] ?? 0) + count;
    save();
  },
  peakRss(load: string, bytes: number): void {
    figures.peakRssMiB[load] = Math.max(figures.peakRssMiB[load] ?? 0, Math.round(bytes / 2 ** 20));
    save();
  },
  data(checked: number, lost: number): void {
    figures.dataChecked += checked;
    figures.dataLost += lost;
    save();
  },
};
