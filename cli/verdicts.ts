// Verdicts of validate and render, for people (text) and for programs (-o yaml|json). A problem is a rule's
// Violation, split into the pool it is about, the field it names, and the fix its message gives: messages
// are written "<field> <what is wrong>: <fix>", and a message without a separate fix keeps it whole.
import type { KubeObject } from "../api/types.js";
import { canonicalize, canonicalYaml } from "../lib/canonical.js";
import type { Violation } from "../lib/rules/pool-spec.js";
import type { OutputFormat } from "./args.js";
import type { CliIO } from "./input.js";

export interface Problem {
  /** Index in spec.pools; absent for a problem of the CSPC as a whole. */
  pool?: number;
  /** The field the message names first, as a path (spec.pools[0].raidGroups[1]), else the pool's. */
  field?: string;
  reason: string;
  /** The whole message, as the webhook says it. */
  message: string;
  /** The part of the message that says what to do. */
  fix?: string;
}

export interface Verdict {
  kind: string;
  namespace: string;
  name: string;
  verdict: "accepted" | "refused";
  problems: Problem[];
  warnings: string[];
  /** What was assumed for what the files do not say. */
  notes: string[];
  /** validate: checked as a change of the CSPC given with --old. */
  change?: boolean;
  /** render: the number of pools, and how many would be provisioned. */
  pools?: number;
  provisioned?: number;
  /** render: the claims, CStorPoolInstances and Deployments. */
  objects?: KubeObject[];
}

/** "spec.pools[0] (nodeSelector a=b) (pool p) raidGroups[1]" or "spec.pools[0].poolConfig.compression" at the start of a message. */
const LABEL =
  /^(spec\.pools\[\d+\])(?: \(nodeSelector [^)]*\))?(?: \(pool [^)]*\))?((?: (?:raidGroups|blockDevices)\[\d+\])*)(?: (poolConfig(?:\.[A-Za-z]+)+))?|^(spec(?:\.[A-Za-z]+|\[\d+\])+)/;

export function problemOf(violation: Violation): Problem {
  const { message, reason } = violation;
  const label = LABEL.exec(message);
  let field: string | undefined;
  let rest = message;
  if (label) {
    field = label[4] ?? `${label[1]}${label[2].replace(/ /g, ".")}${label[3] ? `.${label[3]}` : ""}`;
    rest = message.slice(label[0].length).replace(/^:?\s*/, "");
  }
  field ??= violation.pool >= 0 ? `spec.pools[${violation.pool}]` : undefined;
  const fix = afterFirstColon(rest);
  return {
    ...(violation.pool >= 0 ? { pool: violation.pool } : {}),
    ...(field ? { field } : {}),
    reason,
    message,
    ...(fix ? { fix } : {}),
  };
}

/** The text after the first ": " outside parentheses, or undefined. */
function afterFirstColon(text: string): string | undefined {
  let depth = 0;
  for (let i = 0; i < text.length - 1; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") depth = Math.max(0, depth - 1);
    else if (c === ":" && text[i + 1] === " " && depth === 0) return text.slice(i + 2) || undefined;
  }
  return undefined;
}

/** Problems without repeats (several rules may word one problem the same way). */
export function problemsOf(violations: readonly Violation[]): Problem[] {
  const seen = new Set<string>();
  return violations.filter((v) => !seen.has(v.message) && seen.add(v.message)).map(problemOf);
}

/** The notes on standard error, each once (several CSPCs often share an assumption). */
export function writeNotes(io: CliIO, verdicts: readonly Verdict[]): void {
  for (const note of new Set(verdicts.flatMap((v) => v.notes))) io.stderr(`note: ${note}\n`);
}

/** -o yaml|json: every verdict, in input order. */
export function writeVerdicts(
  io: CliIO,
  format: Exclude<OutputFormat, "text">,
  verdicts: readonly Verdict[],
): void {
  const document = { items: verdicts };
  io.stdout(
    format === "json" ? `${JSON.stringify(canonicalize(document), null, 2)}\n` : canonicalYaml(document),
  );
}
