// Markdown tables, printed by `npm run bench` and written to bench/results/latest.md, which docs/benchmarks.md
// analyses.

export type Cell = string | number;

export interface Table {
  title: string;
  headers: string[];
  rows: Cell[][];
  /** Lines printed under the table: verdicts, notes. */
  notes?: string[];
}

/** Numbers with a precision that suits their size: 0.0123, 1.23, 12.3, 1234. */
export function num(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return "–";
  if (value === 0) return "0";
  const abs = Math.abs(value);
  if (abs >= 10 ** digits) return Math.round(value).toLocaleString("en-US");
  const text = value.toPrecision(digits);
  return text.includes(".") && !text.includes("e") ? text.replace(/\.?0+$/, "") : text;
}

export function renderTable(table: Table): string {
  const cells = [table.headers, ...table.rows.map((row) => row.map(String))];
  const widths = table.headers.map((_, c) => Math.max(...cells.map((row) => (row[c] ?? "").length), 3));
  const line = (row: readonly string[]): string =>
    `| ${row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join(" | ")} |`;
  const rule = `| ${widths.map((w, c) => (c === 0 ? "-".repeat(w) : `${"-".repeat(w - 1)}:`)).join(" | ")} |`;
  const body = [line(cells[0]), rule, ...cells.slice(1).map(line)];
  const notes = (table.notes ?? []).map((n) => `\n${n}\n`).join("");
  return `### ${table.title}\n\n${body.join("\n")}\n${notes}`;
}
