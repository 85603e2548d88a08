// `cstor-pool get pools|volumes`, `describe pool NAME` and `tree [CSPC]`: the fleet as a person reads it. The
// objects come from the apiserver (cli/cluster.ts) or, with -f, from files (`kubectl get ... -o yaml`); the
// views are cli/views.ts's. This parses, fetches, prints and picks the exit code.
import { KIND } from "../api/constants.js";
import { canonicalJson, canonicalYaml } from "../lib/canonical.js";
import { didYouMean, EXIT, parseFlags, reportUsageError, UsageError, type FlagTable } from "./args.js";
import { contextNamespace, listFromCluster, loadKubeConfig } from "./cluster.js";
import { processIO, readAll, type CliIO } from "./input.js";
import {
  clusterObjects,
  describePool,
  describeText,
  poolRows,
  poolsText,
  tree,
  treeText,
  volumeRows,
  volumesText,
  type ClusterObjects,
  type PoolRow,
  type VolumeRow,
} from "./views.js";

const SOURCE_HELP = `  -n, --namespace      where the objects are (default: the kubeconfig context's namespace, else openebs)
  -o, --output         wide (more columns), json or yaml (the view's data, for programs)
      --kubeconfig     the kubeconfig file (default: KUBECONFIG, else ~/.kube/config, else in-cluster)
  -f, --filename       read the objects from files instead of the cluster (kubectl get cspc,cspi,bdc,deploy,
                       cvc,cv,cvr,events -n openebs -o yaml); a file, a directory or "-"; may be repeated
Exit codes: 0 shown, 1 the named object does not exist, 2 usage error, or the cluster or files cannot be read.
`;

export const GET_USAGE = `Usage: cstor-pool get pools|volumes [-n <namespace>] [-o wide|json|yaml] [--kubeconfig <file>] [-f <file>]

pools: each CStorPoolInstance with its node, health (status.phase), used capacity and the volume replicas it holds
(Healthy/all); -o wide adds the CSPC, used and total space, devices ONLINE/all, read-only, the zpool and the
node daemon's last report. volumes: each CStorVolumeConfig with its phase, the CStorVolume's health, Healthy
replicas of those wanted and the fullest replica's used space; -o wide adds the CSPC, the consistency factor,
the pools and nodes of its replicas.
${SOURCE_HELP}`;

export const DESCRIBE_USAGE = `Usage: cstor-pool describe pool <name> [-n <namespace>] [-o json|yaml] [--kubeconfig <file>] [-f <file>]

One CStorPoolInstance: node, phase, capacity, its pool Deployment; each raid group's devices with the state and
error counts the node daemon last reported and their BlockDeviceClaims; the conditions; the volume replicas on
the pool; the last ten Events about it.
${SOURCE_HELP}`;

export const TREE_USAGE = `Usage: cstor-pool tree [<cspc>] [-n <namespace>] [-o json|yaml] [--kubeconfig <file>] [-f <file>]

Every CStorPoolCluster (or the one named), its CStorPoolInstances, and under each its pool Deployment,
BlockDeviceClaims and volume replicas.
${SOURCE_HELP}`;

const FLAGS: FlagTable<"file" | "namespace" | "output" | "kubeconfig"> = {
  "-f": "file",
  "--filename": "file",
  "-n": "namespace",
  "--namespace": "namespace",
  "-o": "output",
  "--output": "output",
  "--kubeconfig": "kubeconfig",
};

type Output = "text" | "wide" | "json" | "yaml";

interface ViewRequest {
  args: string[];
  output: Output;
  /** The objects, once the kinds the view reads are known. */
  fetch: (kinds: readonly string[]) => Promise<ClusterObjects>;
}

/** Flags → what to show and where to read it; "help" when asked. */
function viewRequest(argv: readonly string[], io: CliIO, outputs: readonly Output[]): ViewRequest | "help" {
  const given = parseFlags(argv, FLAGS, { fileOptional: true, positionals: true });
  if (given === "help") return given;
  const output = (given.output ?? "text") as Output;
  const formats = outputs.filter((o) => o !== "text");
  if (!outputs.includes(output))
    throw new UsageError(
      `-o ${output} is not an output format here: use ${formats.join(", ")}${didYouMean(output, formats)}`,
    );
  if (given.file.length > 0) {
    if (given.kubeconfig)
      throw new UsageError("--kubeconfig and -f exclude each other: -f reads files, not the cluster");
    const namespace = given.namespace ?? "openebs";
    return {
      args: given.args,
      output,
      fetch: () => Promise.resolve(clusterObjects(namespace, readAll(io, given.file))),
    };
  }
  return {
    args: given.args,
    output,
    fetch: async (kinds) => {
      const config = await loadKubeConfig(given.kubeconfig);
      return listFromCluster(config, given.namespace ?? contextNamespace(config) ?? "openebs", kinds);
    },
  };
}

function print(io: CliIO, output: Output, data: unknown, text: () => string): void {
  io.stdout(
    output === "json" ? `${canonicalJson(data)}\n` : output === "yaml" ? canonicalYaml(data) : text(),
  );
}

/** One view command: its usage text, the outputs it offers, and what it shows for a parsed request. */
interface ViewCommand {
  usage: string;
  outputs: readonly Output[];
  show: (request: ViewRequest) => Promise<number>;
}

/** Runs one view: usage errors and unreadable clusters or files are exit 2 with a message. */
async function runView(
  argv: readonly string[],
  io: CliIO,
  { usage, outputs, show }: ViewCommand,
): Promise<number> {
  try {
    const request = viewRequest(argv, io, outputs);
    if (request === "help") {
      io.stdout(usage);
      return EXIT.ok;
    }
    return await show(request);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    return reportUsageError(err, usage, io.stderr);
  }
}

const GET_WHAT: Record<string, "pools" | "volumes"> = {
  pools: "pools",
  pool: "pools",
  cspi: "pools",
  volumes: "volumes",
  volume: "volumes",
  cvc: "volumes",
};

export function runGet(argv: readonly string[], io: CliIO = processIO): Promise<number> {
  return runView(argv, io, {
    usage: GET_USAGE,
    outputs: ["text", "wide", "json", "yaml"],
    show: async ({ args, output, fetch }) => {
      const [what, ...extra] = args;
      const view = what === undefined ? undefined : GET_WHAT[what];
      if (!view)
        throw new UsageError(
          what === undefined
            ? "say what to get: pools or volumes"
            : `cannot get "${what}": use pools or volumes${didYouMean(what, ["pools", "volumes"])}`,
        );
      if (extra.length > 0) throw new UsageError(`unexpected argument ${extra[0]}`);
      const objects = await fetch(
        view === "pools" ? [KIND.cspi, KIND.cvr] : [KIND.cvc, KIND.cv, KIND.cvr, KIND.cspi],
      );
      const wide = output === "wide";
      const rows = view === "pools" ? poolRows(objects) : volumeRows(objects);
      if (rows.length === 0 && (output === "text" || wide)) {
        io.stderr(
          `No ${view === "pools" ? "CStorPoolInstances" : "CStorVolumeConfigs"} found in namespace ${objects.namespace}.\n`,
        );
        return EXIT.ok;
      }
      print(io, output, { items: rows }, () =>
        view === "pools" ? poolsText(rows as PoolRow[], wide) : volumesText(rows as VolumeRow[], wide),
      );
      return EXIT.ok;
    },
  });
}

const names = (objects: readonly { metadata: { name?: string } }[]): string =>
  objects
    .map((o) => o.metadata.name ?? "")
    .sort()
    .join(", ") || "none";

export function runDescribe(argv: readonly string[], io: CliIO = processIO): Promise<number> {
  return runView(argv, io, {
    usage: DESCRIBE_USAGE,
    outputs: ["text", "json", "yaml"],
    show: async ({ args, output, fetch }) => {
      const [what, name, ...extra] = args;
      if (what !== "pool" && what !== "cspi")
        throw new UsageError(
          what === undefined
            ? "say what to describe: pool <name>"
            : `cannot describe "${what}": use pool <name>${didYouMean(what, ["pool"])}`,
        );
      if (!name) throw new UsageError("describe pool needs the CStorPoolInstance's name");
      if (extra.length > 0) throw new UsageError(`unexpected argument ${extra[0]}`);
      const objects = await fetch([KIND.cspi, KIND.blockDeviceClaim, KIND.deployment, KIND.event, KIND.cvr]);
      const pool = describePool(objects, name);
      if (!pool) {
        io.stderr(
          `error: no CStorPoolInstance "${name}" in namespace ${objects.namespace}; it has: ${names(objects.cspis)}\n`,
        );
        return EXIT.refused;
      }
      print(io, output, pool, () => describeText(pool));
      return EXIT.ok;
    },
  });
}

export function runTree(argv: readonly string[], io: CliIO = processIO): Promise<number> {
  return runView(argv, io, {
    usage: TREE_USAGE,
    outputs: ["text", "json", "yaml"],
    show: async ({ args, output, fetch }) => {
      const [name, ...extra] = args;
      if (extra.length > 0) throw new UsageError(`unexpected argument ${extra[0]}`);
      const objects = await fetch([KIND.cspc, KIND.cspi, KIND.deployment, KIND.blockDeviceClaim, KIND.cvr]);
      const nodes = tree(objects, name);
      if (name !== undefined && nodes.length === 0) {
        io.stderr(
          `error: no CStorPoolCluster "${name}" in namespace ${objects.namespace}; it has: ${names(objects.cspcs)}\n`,
        );
        return EXIT.refused;
      }
      if (nodes.length === 0 && output === "text") {
        io.stderr(`No CStorPoolClusters found in namespace ${objects.namespace}.\n`);
        return EXIT.ok;
      }
      print(io, output, { items: nodes }, () => treeText(nodes));
      return EXIT.ok;
    },
  });
}
