// Flag parsing shared by the cstor-pool subcommands that take files: `-f x`, `--flag x`, `--flag=x`,
// each at most once, at most one of them "-" (standard input), -f required.

export class UsageError extends Error {}

/** Flags → option keys; every flag takes a value. */
export type FlagTable<K extends string> = Record<string, K>;

export function parseFileFlags<K extends string>(argv: readonly string[], flags: FlagTable<K>): Partial<Record<K, string>> | "help" {
  const options: Partial<Record<K, string>> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "-h" || arg === "--help") return "help";
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const key = flags[flag];
    if (!key) throw new UsageError(`unknown argument ${arg}`);
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === "") throw new UsageError(`${flag} needs a value`);
    if (options[key] !== undefined) throw new UsageError(`${flag} given twice`);
    options[key] = value;
  }
  if (!(options as Record<string, string | undefined>).file) throw new UsageError("-f <file> is required");
  const stdin = Object.entries(options).filter(([, v]) => v === "-");
  if (stdin.length > 1) throw new UsageError(`only one file can be "-" (standard input), not ${stdin.map(([k]) => k).join(" and ")}`);
  return options;
}
