// `cstor-pool render -f cspc.yaml [--block-devices bds.yaml] [--nodes nodes.yaml]`: what the hooks would create
// for a CStorPoolCluster, as YAML to review in Git before applying. The hooks themselves decide (cspc-sync,
// then cspi-sync for each pool), fed the way Metacontroller feeds them, over the same offline facts as
// validate (cli/offline.ts); claims are taken as bound, as NDM would bind them, so the output is the end
// state: the claims, the CStorPoolInstances and their Deployments. Exit 1 when some pool would not be built.
import { KIND, LABEL, TYPE_KEY } from "../api/constants.js";
import type { CSPC, KubeObject, ObjectMap } from "../api/types.js";
import type { ClusterFacts } from "../lib/admission/lookup.js";
import { ConfigError, loadHookConfig, type HookConfig } from "../lib/hook-config.js";
import { answerCspcSync, planChildren } from "../lib/cspc/sync.js";
import { answerCspiSync } from "../lib/cspi/sync.js";
import { parseCompositeRequest, parseDecoratorRequest } from "../lib/request.js";
import { canonicalJson, canonicalYaml } from "../lib/canonical.js";
import { buildInventory } from "../lib/inventory.js";
import { checkCspcShape } from "../lib/rules/admission-shape.js";
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
} from "./args.js";
import { processIO, readAll, type CliIO } from "./input.js";
import { offlineFacts, placed, readClusterFiles, type ClusterFiles } from "./offline.js";
import { problemsOf, writeNotes, writeVerdicts, type Verdict } from "./verdicts.js";

export const RENDER_USAGE = `Usage: cstor-pool render -f <file|dir|-> [--block-devices <file>] [--nodes <file>] [-n <namespace>] [-o yaml|json]

Prints what the hooks would create for each CStorPoolCluster: BlockDeviceClaims, CStorPoolInstances and pool
Deployments, as YAML to review or apply. Claims are shown as NDM would bind them.
  -f, --filename       the CSPC(s): a file, a directory of .yaml/.yml/.json files, or "-" (standard input);
                       may be repeated
  --block-devices      BlockDevices, and optionally BlockDeviceClaims, CStorPoolInstances and CStorVolumeReplicas,
                       to render a change against what exists (kubectl get bd,bdc,cspi,cvr -n openebs -o yaml);
                       without it every device is assumed to exist, be Active, empty, unclaimed and on its pool's node
  --nodes              Nodes (kubectl get nodes -o yaml); without it each nodeSelector selects a node of its own
  -n, --namespace      the namespace of a CSPC without metadata.namespace (default openebs, the install's)
  -o, --output         yaml or json: the verdicts for programs (pools, provisioned, problems with pool, field,
                       reason, message, fix) with the objects under "objects"
Assumptions are printed as notes on standard error.
${EXIT_CODES_HELP}
`;

function parseArgs(argv: readonly string[]): CommonOptions | "help" {
  const given = parseFlags(argv, COMMON_FLAGS);
  return given === "help" ? given : commonOptions(given);
}

/** Syncs until the hooks' answer stops changing: claims bound, removals marked and then carried out. */
const MAX_SYNCS = 6;

export async function runRender(argv: readonly string[], io: CliIO = processIO): Promise<number> {
  let options: CommonOptions;
  let cspcs: { object: KubeObject; notes: string[] }[];
  let files: ClusterFiles;
  let config: HookConfig;
  try {
    const parsed = parseArgs(argv);
    if (parsed === "help") {
      io.stdout(RENDER_USAGE);
      return EXIT.ok;
    }
    options = parsed;
    const objects = readAll(io, options.files);
    const others = objects.filter((o) => o.kind !== KIND.cspc).map((o) => o.kind);
    const from = options.files.join(", ");
    if (others.length > 0)
      throw new InputError(
        `${from} holds ${[...new Set(others)].join(", ")}; only CStorPoolClusters can be rendered`,
      );
    if (objects.length === 0) throw new InputError(`${from} holds no CStorPoolCluster`);
    cspcs = placed(objects, options.namespace);
    files = readClusterFiles(io, options);
    config = loadHookConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError)
      return reportUsageError(new InputError(err.message), RENDER_USAGE, io.stderr);
    if (!(err instanceof UsageError)) throw err;
    return reportUsageError(err, RENDER_USAGE, io.stderr);
  }

  const verdicts = cspcs.map(({ object, notes }) => renderOne(withDefaults(object), files, notes, config));
  writeNotes(io, verdicts);
  if (options.output === "text") {
    io.stdout(verdicts.map(asText).join("---\n"));
  } else {
    writeVerdicts(io, options.output, verdicts);
  }
  return verdicts.some((v) => v.verdict === "refused") ? EXIT.refused : EXIT.ok;
}

interface Rendered extends Verdict {
  conditions: { type: string; status: string; reason: string; message: string }[];
}

/** The hooks' answer for one CSPC, fed as Metacontroller would feed them, until it settles. */
function renderOne(cspc: KubeObject, files: ClusterFiles, notes: string[], config: HookConfig): Rendered {
  const namespace = cspc.metadata.namespace!;
  const name = cspc.metadata.name ?? "";
  const subject = { kind: KIND.cspc, namespace, name, notes, warnings: [] };
  const facts = offlineFacts(cspc as CSPC, null, files, notes);
  // What the API server's schema check would refuse never reaches the hooks.
  const shape = checkCspcShape(cspc);
  if (shape.length > 0) {
    const pools = (cspc as { spec?: { pools?: unknown } }).spec?.pools;
    return {
      ...subject,
      verdict: "refused",
      problems: problemsOf(shape),
      pools: Array.isArray(pools) ? pools.length : 0,
      provisioned: 0,
      objects: [],
      conditions: [],
    };
  }

  const ownedBy = (o: KubeObject) => o.metadata.labels?.[LABEL.cspc] === name;
  const claims: readonly KubeObject[] = facts.claims;
  const otherClaims = claims.filter((c) => !ownedBy(c));
  const sync = (children: readonly KubeObject[]) => request(cspc, children, facts, otherClaims);
  let children: KubeObject[] = [...facts.cspis, ...claims.filter(ownedBy)];
  let answer = answerCspcSync(parseCompositeRequest(sync(children), KIND.cspc), () => new Date()).response;
  for (let i = 1; i < MAX_SYNCS; i++) {
    const next = answer.children.map(boundAsNdmWould);
    if (canonicalJson(next) === canonicalJson(children)) break;
    children = next;
    answer = answerCspcSync(parseCompositeRequest(sync(children), KIND.cspc), () => new Date()).response;
  }
  const last = sync(children) as { parent: KubeObject; children: ObjectMap; related: ObjectMap };
  const { findings } = planChildren(cspc as CSPC, buildInventory(last.parent, last.children, last.related));

  const renderedCspis = answer.children.filter((c) => c.kind === KIND.cspi);
  const deployments = renderedCspis.flatMap(
    (cspi) =>
      answerCspiSync(
        parseDecoratorRequest(
          { controller: {}, object: cspi, attachments: {}, related: {}, finalizing: false },
          KIND.cspi,
        ),
        () => new Date(),
        config,
      ).attachments,
  );
  const status = answer.status as { desiredInstances?: number; conditions?: Rendered["conditions"] };
  const pools = status.desiredInstances ?? 0;
  return {
    ...subject,
    verdict: renderedCspis.length < pools ? "refused" : "accepted",
    problems: problemsOf([...findings.blocked, ...findings.rejected]),
    pools,
    provisioned: renderedCspis.length,
    objects: [...answer.children, ...deployments],
    conditions: status.conditions ?? [],
  };
}

/** The objects as YAML, under a comment saying how many pools would be provisioned and why not the rest. */
function asText(r: Rendered): string {
  const header = [
    `# ${r.kind} ${r.namespace}/${r.name}: ${r.pools} pool(s), ${r.provisioned} would be provisioned`,
    ...r.conditions
      .filter((c) => c.type === "Ready" || c.status === "True")
      .map((c) => `# ${c.type}=${c.status} (${c.reason}): ${c.message.replace(/\n/g, " ")}`),
    ...(r.conditions.length === 0 ? r.problems.map((p) => `# refused: ${p.message}`) : []),
  ].join("\n");
  return `${header}\n${(r.objects ?? []).map((o) => canonicalYaml(o)).join("---\n")}`;
}

/** As the apiserver would hold it: with a generation. */
function withDefaults(cspc: KubeObject): KubeObject {
  return { ...cspc, metadata: { generation: 1, ...cspc.metadata } };
}

/** What NDM does to a claim of ours: binds it. */
function boundAsNdmWould(child: KubeObject): KubeObject {
  if (child.kind !== KIND.blockDeviceClaim) return child;
  return { ...child, status: { phase: "Bound" } };
}

function keyed(objects: readonly KubeObject[]): Record<string, KubeObject> {
  return Object.fromEntries(objects.map((o) => [`${o.metadata.namespace}/${o.metadata.name}`, o]));
}

/** A v2 sync request as Metacontroller would send it for this CSPC. */
function request(
  cspc: KubeObject,
  children: readonly KubeObject[],
  facts: ClusterFacts,
  otherClaims: readonly KubeObject[],
): unknown {
  const childrenMap: ObjectMap = {
    [TYPE_KEY.cspi]: keyed(children.filter((c) => c.kind === KIND.cspi)),
    [TYPE_KEY.blockDeviceClaim]: keyed(children.filter((c) => c.kind === KIND.blockDeviceClaim)),
  };
  const related: ObjectMap = {
    [TYPE_KEY.blockDevice]: keyed(facts.blockDevices),
    [TYPE_KEY.blockDeviceClaim]: keyed([
      ...otherClaims,
      ...children.filter((c) => c.kind === KIND.blockDeviceClaim),
    ]),
    [TYPE_KEY.node]: Object.fromEntries(facts.nodes.map((n) => [n.metadata.name!, n])),
  };
  return {
    controller: { apiVersion: "metacontroller.k8s.io/v1alpha1", kind: "CompositeController" },
    parent: cspc,
    children: childrenMap,
    related,
    finalizing: false,
  };
}
