// `cstor-pool validate -f new.yaml [--old old.yaml] [--block-devices bds.yaml] [--nodes nodes.yaml]`: the
// admission webhook's verdict, offline, for users who review a change before applying it. The same judge
// (lib/admission/judge.ts) decides; what the files do not say is assumed, and the output says what was.
// Exit code: 0 accepted (warnings printed), 1 refused, 2 usage or unreadable input.
import { parseFileFlags, UsageError, type FlagTable } from "./args.js";
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { KIND, LABEL } from "../api/constants.js";
import type { CSPC, CSPI, KubeObject, PoolSpec } from "../api/types.js";
import { judgeCspc, inventoryOf, type AdmissionInput } from "../lib/admission/judge.js";
import type { ClusterFacts } from "../lib/admission/lookup.js";
import { buildCspiSpec, devicesOf } from "../lib/cspc/build.js";
import { cspiName } from "../lib/names.js";
import { resolveNode } from "../lib/rules/placement.js";

export interface ValidateIO {
  stdout(text: string): void;
  stderr(text: string): void;
  /** "-" is standard input. */
  readFile(path: string): string;
}

export const processIO: ValidateIO = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  readFile: (path) => readFileSync(path === "-" ? 0 : path, "utf8"),
};

export const VALIDATE_USAGE = `Usage: cstor-pool validate -f <new.yaml> [--old <old.yaml>] [--block-devices <file>] [--nodes <file>]

Checks CStorPoolClusters as the admission webhook would, without a cluster.
  -f, --filename       the CSPC(s) to check ("-" reads standard input)
  --old                the CSPC(s) as stored now, to check a change (kubectl get cspc <name> -o yaml)
  --block-devices      BlockDevices, and optionally BlockDeviceClaims and CStorPoolInstances
                       (kubectl get bd,bdc,cspi -n <namespace> -o yaml)
  --nodes              Nodes (kubectl get nodes -o yaml)
Exit code: 0 accepted, 1 refused, 2 usage error.
`;

export { UsageError };

interface Options {
  file: string;
  old?: string;
  blockDevices?: string;
  nodes?: string;
}

const FLAGS: FlagTable<keyof Options> = {
  "-f": "file",
  "--filename": "file",
  "--old": "old",
  "--block-devices": "blockDevices",
  "--nodes": "nodes",
};

function parseArgs(argv: readonly string[]): Options | "help" {
  return parseFileFlags(argv, FLAGS) as Options | "help";
}

/** Every object of a file: multi-document YAML or JSON, `kind: List` flattened. YAML 1.1, as kubectl reads it. */
export function readObjects(io: ValidateIO, path: string): KubeObject[] {
  let text: string;
  try {
    text = io.readFile(path);
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as Error).message}`);
  }
  const out: KubeObject[] = [];
  for (const doc of parseAllDocuments(text, { version: "1.1" })) {
    if (doc.errors.length > 0) throw new UsageError(`${path} is not valid YAML: ${doc.errors[0]!.message}`);
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) continue;
    const items = (value as { kind?: string; items?: unknown[] }).kind === "List" ? ((value as { items?: unknown[] }).items ?? []) : [value];
    for (const item of items) {
      if (!item || typeof item !== "object" || typeof (item as KubeObject).kind !== "string") {
        throw new UsageError(`${path} holds something that is not a Kubernetes object (no kind)`);
      }
      out.push(item as KubeObject);
    }
  }
  return out;
}

const ofKind = (objects: readonly KubeObject[], kind: string) => objects.filter((o) => o.kind === kind);
const key = (o: KubeObject) => `${o.metadata?.namespace ?? "default"}/${o.metadata?.name ?? ""}`;

export async function runValidate(argv: readonly string[], io: ValidateIO = processIO): Promise<number> {
  let options: Options | "help";
  let inputs: { proposed: KubeObject[]; stored: KubeObject[]; cluster: KubeObject[]; nodes?: KubeObject[] };
  try {
    options = parseArgs(argv);
    if (options === "help") {
      io.stdout(VALIDATE_USAGE);
      return 0;
    }
    const proposed = readObjects(io, options.file);
    if (proposed.length === 0) throw new UsageError(`${options.file} holds no object`);
    inputs = {
      proposed,
      stored: options.old ? ofKind(readObjects(io, options.old), KIND.cspc) : [],
      cluster: options.blockDevices ? readObjects(io, options.blockDevices) : [],
      ...(options.nodes ? { nodes: ofKind(readObjects(io, options.nodes), KIND.node) } : {}),
    };
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr(`error: ${err.message}\n\n${VALIDATE_USAGE}`);
    return 2;
  }

  let refused = false;
  for (const object of inputs.proposed) {
    const stored = inputs.stored.find((o) => key(o) === key(object));
    const input: AdmissionInput = {
      operation: stored ? "UPDATE" : "CREATE",
      namespace: object.metadata?.namespace ?? "default",
      name: object.metadata?.name ?? "",
      object,
      oldObject: stored ?? null,
    };
    const { facts, notes } = offlineFacts(input, inputs, Boolean(options.blockDevices));
    const judgement = judgeCspc(input, facts);
    const what = `${object.kind} ${input.namespace}/${input.name}${stored ? " (change)" : ""}`;
    if (judgement.allowed) {
      io.stdout(`${what}: accepted\n`);
    } else {
      refused = true;
      const messages = judgement.violations.length > 0 ? judgement.violations.map((v) => v.message) : [judgement.status?.message ?? ""];
      io.stdout(`${what}: refused\n${[...new Set(messages)].map((m) => `  - ${m}\n`).join("")}`);
    }
    for (const w of judgement.warnings) io.stdout(`  warning: ${w}\n`);
    for (const n of notes) io.stdout(`  note: ${n}\n`);
  }
  if (options.old && inputs.stored.length > 0 && !inputs.proposed.some((p) => inputs.stored.some((s) => key(s) === key(p)))) {
    io.stdout(`note: no CStorPoolCluster in ${options.old} has the namespace/name of one in ${options.file}; each was checked as new\n`);
  }
  return refused ? 1 : 0;
}

/**
 * The cluster facts the webhook would look up, from the files, with stand-ins for what they do not hold:
 * a node per nodeSelector, healthy free devices on their pool's node, and (with --old but no CSPIs) the pools
 * of the stored CSPC as built and ONLINE, so the day-2 rules compare against them.
 */
function offlineFacts(
  input: AdmissionInput,
  inputs: { cluster: KubeObject[]; nodes?: KubeObject[] },
  haveDevices: boolean,
): { facts: ClusterFacts; notes: string[] } {
  const notes: string[] = [];
  const proposed = input.object as CSPC;
  const stored = input.oldObject as CSPC | null;
  const poolsOf = (c: CSPC | null): PoolSpec[] => (Array.isArray(c?.spec?.pools) ? c!.spec.pools : []);
  const allPools = [...poolsOf(proposed), ...poolsOf(stored)].filter((p) => p && typeof p === "object");
  const inNamespace = (o: KubeObject) => (o.metadata?.namespace ?? input.namespace) === input.namespace;

  let nodes = inputs.nodes;
  if (!nodes) {
    nodes = assumedNodes(allPools);
    notes.push("no --nodes: each distinct nodeSelector is assumed to select one node of its own");
  }
  let blockDevices = ofKind(inputs.cluster, KIND.blockDevice).filter(inNamespace);
  if (!haveDevices) {
    blockDevices = assumedDevices(proposed, stored, nodes, input.namespace);
    notes.push("no --block-devices: every device is assumed to exist, be Active, empty, unclaimed and on its pool's node");
  }
  const claims = ofKind(inputs.cluster, KIND.blockDeviceClaim).filter(inNamespace);
  let cspis = ofKind(inputs.cluster, KIND.cspi).filter((c) => inNamespace(c) && c.metadata.labels?.[LABEL.cspc] === input.name) as unknown as CSPI[];
  if (stored && cspis.length === 0) {
    cspis = assumedPools(stored, { blockDevices: blockDevices as ClusterFacts["blockDevices"], claims: claims as ClusterFacts["claims"], nodes, cspis: [] });
    notes.push(
      "no CStorPoolInstances given: the pools of --old are assumed built, ONLINE and without volumes (give them with --block-devices to check pool removal)",
    );
  }
  return { facts: { blockDevices: blockDevices as ClusterFacts["blockDevices"], claims: claims as ClusterFacts["claims"], nodes, cspis }, notes };
}

function hostnameOf(selector: Record<string, string>): string | undefined {
  const match = Object.keys(selector).find((k) => k.toLowerCase() === LABEL.hostname.toLowerCase());
  return match ? selector[match] : undefined;
}

function assumedNodes(pools: readonly PoolSpec[]): KubeObject[] {
  const bySelector = new Map<string, KubeObject>();
  for (const pool of pools) {
    const selector = pool.nodeSelector && typeof pool.nodeSelector === "object" ? pool.nodeSelector : {};
    const id = JSON.stringify(Object.entries(selector).sort());
    if (bySelector.has(id)) continue;
    const name = hostnameOf(selector) ?? `node-selected-by-${Object.entries(selector).sort().map(([k, v]) => `${k}=${v}`).join(",")}`;
    bySelector.set(id, { apiVersion: "v1", kind: KIND.node, metadata: { name, labels: { [LABEL.hostname]: name, ...selector } } });
  }
  return [...bySelector.values()];
}

/** Healthy free devices, each on the node its pool in the new spec selects (a moved pool's devices moved too). */
function assumedDevices(proposed: CSPC, stored: CSPC | null, nodes: KubeObject[], namespace: string): KubeObject[] {
  const devices = new Map<string, KubeObject>();
  for (const cspc of [proposed, stored]) {
    const pools = Array.isArray(cspc?.spec?.pools) ? cspc!.spec.pools : [];
    const facts = { blockDevices: [], claims: [], nodes, cspis: [] };
    pools.forEach((pool, i) => {
      const host = resolveNode(pool, i, inventoryOf(cspc!, facts)).host ?? hostnameOf(pool.nodeSelector ?? {}) ?? "";
      for (const group of pool.raidGroups ?? []) {
        for (const d of group.blockDevices ?? []) {
          if (!d?.blockDeviceName || devices.has(d.blockDeviceName)) continue;
          devices.set(d.blockDeviceName, {
            apiVersion: "openebs.io/v1alpha1",
            kind: KIND.blockDevice,
            metadata: { name: d.blockDeviceName, namespace, labels: { [LABEL.hostname]: host } },
            spec: { ...(d.capacity !== undefined ? { capacity: { storage: d.capacity } } : {}), ...(d.devLink ? { path: d.devLink } : {}) },
            status: { state: "Active", claimState: "Unclaimed" },
          });
        }
      }
    });
  }
  return [...devices.values()];
}

/** The stored CSPC's pools as cspc-sync would have built them. */
function assumedPools(stored: CSPC, facts: ClusterFacts): CSPI[] {
  const namespace = stored.metadata.namespace ?? "default";
  const inventory = inventoryOf({ ...stored, metadata: { ...stored.metadata, namespace } }, facts);
  return (stored.spec?.pools ?? []).map((pool, i) => {
    const host = resolveNode(pool, i, inventory).host ?? hostnameOf(pool.nodeSelector ?? {}) ?? "";
    const name = cspiName(namespace, stored.metadata.name ?? "", devicesOf(pool.raidGroups));
    return {
      apiVersion: "openebs.io/v1alpha1",
      kind: KIND.cspi,
      metadata: { name, namespace, labels: { [LABEL.cspc]: stored.metadata.name ?? "", [LABEL.hostname]: host } },
      spec: buildCspiSpec(pool, host, inventory),
      status: { phase: "ONLINE", provisionedVolumes: 0 },
    } as CSPI;
  });
}
