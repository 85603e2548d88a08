// `cstor-pool validate -f new.yaml [--old old.yaml] [--block-devices bds.yaml] [--nodes nodes.yaml]`: the
// admission webhook's verdict, offline, for users who review a change before applying it. The same judge
// (lib/admission/judge.ts) decides; what the files do not say is assumed (cli/offline.ts), and a note on
// standard error says what was.
import { KIND } from "../api/constants.js";
import type { CSPC, KubeObject } from "../api/types.js";
import { judgeCspc, type AdmissionInput } from "../lib/admission/judge.js";
import {
  commonOptions,
  COMMON_FLAGS,
  EXIT,
  EXIT_CODES_HELP,
  InputError,
  parseFlags,
  reportUsageError,
  UsageError,
  type CommonOptions,
  type FlagTable,
} from "./args.js";
import { processIO, readAll, type CliIO } from "./input.js";
import { offlineFacts, placed, readClusterFiles, type ClusterFiles } from "./offline.js";
import { problemsOf, writeNotes, writeVerdicts, type Verdict } from "./verdicts.js";

export const VALIDATE_USAGE = `Usage: cstor-pool validate -f <file|dir|-> [--old <file>] [--block-devices <file>] [--nodes <file>] [-n <namespace>] [-o yaml|json]

Checks CStorPoolClusters as the admission webhook would, without a cluster.
  -f, --filename       the CSPC(s) to check: a file, a directory of .yaml/.yml/.json files, or "-" (standard
                       input); may be repeated
  --old                the CSPC(s) as stored now, to check a change (kubectl get cspc <name> -n <namespace> -o yaml)
  --block-devices      BlockDevices, and optionally BlockDeviceClaims, CStorPoolInstances and CStorVolumeReplicas
                       (kubectl get bd,bdc,cspi,cvr -n openebs -o yaml); without it every device is assumed to
                       exist, be Active, empty, unclaimed and on its pool's node
  --nodes              Nodes (kubectl get nodes -o yaml); without it each nodeSelector selects a node of its own
  -n, --namespace      the namespace of a CSPC without metadata.namespace (default openebs, the install's)
  -o, --output         yaml or json: the verdicts for programs (pool, field, reason, message, fix)
Assumptions are printed as notes on standard error.
${EXIT_CODES_HELP}
`;

interface Options extends CommonOptions {
  old?: string;
}

const FLAGS: FlagTable<"file" | "blockDevices" | "nodes" | "namespace" | "output" | "old"> = {
  ...COMMON_FLAGS,
  "--old": "old",
};

function parseArgs(argv: readonly string[]): Options | "help" {
  const given = parseFlags(argv, FLAGS);
  if (given === "help") return given;
  return { ...commonOptions(given), ...(given.old ? { old: given.old } : {}) };
}

const key = (o: KubeObject) => `${o.metadata?.namespace}/${o.metadata?.name ?? ""}`;

export async function runValidate(argv: readonly string[], io: CliIO = processIO): Promise<number> {
  let options: Options;
  let proposed: { object: KubeObject; notes: string[] }[];
  let stored: KubeObject[];
  let files: ClusterFiles;
  try {
    const parsed = parseArgs(argv);
    if (parsed === "help") {
      io.stdout(VALIDATE_USAGE);
      return EXIT.ok;
    }
    options = parsed;
    proposed = placed(readAll(io, options.files), options.namespace);
    if (proposed.length === 0) throw new InputError(`${options.files.join(", ")} holds no object`);
    stored = options.old
      ? placed(
          readAll(io, [options.old]).filter((o) => o.kind === KIND.cspc),
          options.namespace,
        ).map((p) => p.object)
      : [];
    files = readClusterFiles(io, options);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    return reportUsageError(err, VALIDATE_USAGE, io.stderr);
  }

  const verdicts = proposed.map(({ object, notes }) =>
    verdictOf(
      object,
      notes,
      stored.find((o) => key(o) === key(object)),
      files,
    ),
  );
  if (
    options.old &&
    stored.length > 0 &&
    !proposed.some((p) => stored.some((s) => key(s) === key(p.object)))
  ) {
    io.stderr(
      `note: no CStorPoolCluster in ${options.old} has the namespace/name of one in ${options.files.join(", ")}; each was checked as new\n`,
    );
  }

  writeNotes(io, verdicts);
  if (options.output === "text") writeVerdictLines(io, verdicts);
  else writeVerdicts(io, options.output, verdicts);
  return verdicts.some((v) => v.verdict === "refused") ? EXIT.refused : EXIT.ok;
}

/** The text output: a line per object, its problems and warnings under it. */
function writeVerdictLines(io: CliIO, verdicts: readonly Verdict[]): void {
  for (const v of verdicts) {
    io.stdout(`${v.kind} ${v.namespace}/${v.name}${v.change ? " (change)" : ""}: ${v.verdict}\n`);
    for (const p of v.problems) io.stdout(`  - ${p.message}\n`);
    for (const w of v.warnings) io.stdout(`  warning: ${w}\n`);
  }
}

/** One proposed object judged as the admission webhook would, with what the files tell of the cluster. */
function verdictOf(
  object: KubeObject,
  notes: string[],
  old: KubeObject | undefined,
  files: ClusterFiles,
): Verdict {
  const input: AdmissionInput = {
    operation: old ? "UPDATE" : "CREATE",
    namespace: object.metadata?.namespace ?? "",
    name: object.metadata?.name ?? "",
    object,
    oldObject: old ?? null,
  };
  const facts =
    object.kind === KIND.cspc
      ? offlineFacts(object as CSPC, (old as CSPC | undefined) ?? null, files, notes)
      : {};
  const judgement = judgeCspc(input, facts);
  const problems = judgement.allowed
    ? []
    : judgement.violations.length > 0
      ? problemsOf(judgement.violations)
      : [{ reason: "Refused", message: judgement.status?.message ?? "" }];
  const verdict: Verdict = {
    kind: object.kind,
    namespace: input.namespace,
    name: input.name,
    verdict: judgement.allowed ? "accepted" : "refused",
    problems,
    warnings: judgement.warnings,
    notes,
    change: Boolean(old),
  };
  return verdict;
}
