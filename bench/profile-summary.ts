// Summarises V8 CPU profiles (`node --cpu-prof`, `npm run bench -- --profile`): the functions with the most
// self time, as a Markdown table, so docs/benchmarks.md can say where a missed target's time goes.
//   npx tsx bench/profile-summary.ts bench/results/profiles/<file>.cpuprofile [more files] [--top=15]
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import { num, renderTable, type Table } from "./table.js";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  /** "name (file:line)", or V8's own entries: "(garbage collector)", "(program)". */
  where: string;
  ms: number;
  share: number;
}

/** Self time per function over the whole profile, idle time left out; the largest first. */
export function selfTimes(profile: CpuProfile): SelfTime[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id)?.callFrame;
    if (!frame || frame.functionName === "(idle)") return;
    // The delta before a sample is the time that sample stands for (V8's own convention).
    const micros = profile.timeDeltas[i] ?? 0;
    const file = frame.url
      ? `${frame.url.replace(/^.*\/(node_modules\/)/, "$1").replace(/^file:\/\/.*?\/(bench\/\.build\/)?/, "")}:${frame.lineNumber + 1}`
      : "";
    const where = `${frame.functionName || "(anonymous)"}${file ? ` (${file})` : ""}`;
    totals.set(where, (totals.get(where) ?? 0) + micros);
    busy += micros;
  });
  return [...totals.entries()]
    .map(([where, micros]) => ({ where, ms: micros / 1000, share: micros / busy }))
    .sort((a, b) => b.ms - a.ms);
}

export function profileTable(file: string, top: number): Table {
  const times = selfTimes(JSON.parse(readFileSync(file, "utf8")) as CpuProfile);
  const busy = times.reduce((sum, t) => sum + t.ms, 0);
  return {
    title: `Self time in ${basename(file)} (${num(busy)} ms busy)`,
    headers: ["function", "self ms", "share"],
    rows: times.slice(0, top).map((t) => [t.where, num(t.ms), `${num(t.share * 100)} %`]),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: "string", default: "15" } },
  });
  for (const file of positionals) console.log(renderTable(profileTable(file, Number(values.top))));
}
