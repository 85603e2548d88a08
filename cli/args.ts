// Flag parsing shared by the cstor-pool subcommands, as kubectl users type them: `-f x`, `--flag x`,
// `--flag=x`; -f may be repeated, every other flag is given at most once; a mistyped flag gets a suggestion.

/** A usage error: exit code 2, with the usage text. */
export class UsageError extends Error {}

/** Input that cannot be read or is not Kubernetes objects: exit code 2, without the usage text (the flags were right). */
export class InputError extends UsageError {}

/** Says what went wrong and returns exit code 2; the usage only when the arguments were wrong. */
export function reportUsageError(err: UsageError, usage: string, stderr: (text: string) => void): number {
  stderr(err instanceof InputError ? `error: ${err.message}\n` : `error: ${err.message}\n\n${usage}`);
  return EXIT.usage;
}

/** Exit codes of every subcommand (the node daemon's local mode adds its own for "changed" and "held"). */
export const EXIT = { ok: 0, refused: 1, usage: 2 } as const;

export const EXIT_CODES_HELP =
  "Exit codes: 0 ok (accepted, or every pool renders), 1 refused (some pool would not be built), 2 usage error or unreadable input.";

/** Flags → option keys; every flag takes a value. */
export type FlagTable<K extends string> = Record<string, K>;

export type OutputFormat = "text" | "yaml" | "json";

/** The options common to validate and render. */
export interface CommonOptions {
  files: string[];
  blockDevices?: string;
  nodes?: string;
  namespace?: string;
  output: OutputFormat;
}

export const COMMON_FLAGS: FlagTable<"file" | "blockDevices" | "nodes" | "namespace" | "output"> = {
  "-f": "file",
  "--filename": "file",
  "--block-devices": "blockDevices",
  "--nodes": "nodes",
  "-n": "namespace",
  "--namespace": "namespace",
  "-o": "output",
  "--output": "output",
};

/** The closest of the candidates to a mistyped word (at most two edits, or a prefix), or undefined. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = candidate.startsWith(word) && word.length >= 3 ? 1 : editDistance(word, candidate);
    if (distance <= 2 && (!best || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(
        previous[j] + 1,
        current[j - 1] + 1,
        previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    previous = current;
  }
  return previous[b.length];
}

export const didYouMean = (word: string, candidates: readonly string[]): string => {
  const near = closest(word, candidates);
  return near ? ` (did you mean ${near}?)` : "";
};

export interface ParseOptions {
  /** -f may be left out (the views read the cluster without it). */
  fileOptional?: boolean;
  /** Words that are not flags are kept in `args` (`describe pool NAME`) instead of refused. */
  positionals?: boolean;
}

/** Parses flags; "file" collects every -f, "args" the words that are not flags when positionals are allowed. */
export function parseFlags<K extends string>(
  argv: readonly string[],
  flags: FlagTable<K>,
  parse: ParseOptions = {},
): (Partial<Record<Exclude<K, "file">, string>> & { file: string[]; args: string[] }) | "help" {
  const options: Record<string, string | string[]> = { file: [], args: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "-h" || arg === "--help") return "help";
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const key = flags[flag];
    if (!key && parse.positionals && !arg.startsWith("-")) {
      (options.args as string[]).push(arg);
      continue;
    }
    if (!key) {
      const what = flag.startsWith("-") ? "unknown flag" : "unexpected argument";
      throw new UsageError(
        `${what} ${flag}${flag.startsWith("-") ? didYouMean(flag, Object.keys(flags)) : ""}`,
      );
    }
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === "") throw new UsageError(`${flag} needs a value`);
    if (key === "file") (options.file as string[]).push(value);
    else if (options[key] !== undefined) throw new UsageError(`${flag} given twice`);
    else options[key] = value;
  }
  const files = options.file as string[];
  if (files.length === 0 && !parse.fileOptional) throw new UsageError("-f <file> is required");
  const stdin = [
    ...files.filter((f) => f === "-").map(() => "-f"),
    ...Object.entries(options)
      .filter(([k, v]) => k !== "file" && k !== "args" && v === "-")
      .map(([k]) => k),
  ];
  if (stdin.length > 1)
    throw new UsageError(`only one file can be "-" (standard input), not ${stdin.join(" and ")}`);
  return options as Partial<Record<Exclude<K, "file">, string>> & { file: string[]; args: string[] };
}

/** The common flags' values, checked. */
export function commonOptions(given: {
  file: string[];
  blockDevices?: string;
  nodes?: string;
  namespace?: string;
  output?: string;
}): CommonOptions {
  const output = given.output ?? "text";
  if (output !== "text" && output !== "yaml" && output !== "json") {
    throw new UsageError(
      `-o ${output} is not an output format: use yaml or json${didYouMean(output, ["yaml", "json"])}`,
    );
  }
  return {
    files: given.file,
    output,
    ...(given.blockDevices ? { blockDevices: given.blockDevices } : {}),
    ...(given.nodes ? { nodes: given.nodes } : {}),
    ...(given.namespace ? { namespace: given.namespace } : {}),
  };
}
