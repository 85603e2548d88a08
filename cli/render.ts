// `cstor-pool render -f cspc.yaml [--block-devices bds.yaml] [--nodes nodes.yaml]`: what the hooks would create
// for a CStorPoolCluster, as YAML to review in Git before applying. The hooks themselves decide (cspc-sync,
// then cspi-sync for each pool), fed the way Metacontroller feeds them; claims are taken as bound, as NDM
// would bind them, so the output is the end state: the claims, the CStorPoolInstances and their Deployments.
// Exit code: 0 every pool renders, 1 some pool would not be provisioned (the CSPC conditions say why), 2 usage.
import { KIND, LABEL, TYPE_KEY } from "../api/constants.js";
import type { KubeObject, ObjectMap } from "../api/types.js";
import { ConfigError, loadHookConfig, type HookConfig } from "../lib/hook-config.js";
import { syncCspcRequest } from "../lib/cspc/sync.js";
import { syncCspiRequest } from "../lib/cspi/sync.js";
import { parseCompositeRequest, parseDecoratorRequest } from "../lib/request.js";
import { canonicalJson, canonicalYaml } from "../lib/canonical.js";
import { parseFileFlags, UsageError, type FlagTable } from "./args.js";
import { processIO, readObjects, type ValidateIO } from "./validate.js";

export const RENDER_USAGE = `Usage: cstor-pool render -f <cspc.yaml> [--block-devices <file>] [--nodes <file>] [-n <namespace>]

Prints what the hooks would create for each CStorPoolCluster: BlockDeviceClaims, CStorPoolInstances and pool
Deployments, as YAML. Claims are shown as NDM would bind them.
  -f, --filename       the CSPC(s) ("-" reads standard input)
  --block-devices      BlockDevices, and optionally BlockDeviceClaims and CStorPoolInstances, to render a change
                       against what exists (kubectl get bd,bdc,cspi -n <namespace> -o yaml)
  --nodes              Nodes (kubectl get nodes -o yaml); without it, one node per host the devices name
  -n, --namespace      for a CSPC without metadata.namespace (default openebs)
Exit code: 0 every pool renders, 1 some pool would not be provisioned, 2 usage error.
`;

interface Options {
  file: string;
  blockDevices?: string;
  nodes?: string;
  namespace: string;
}

const FLAGS: FlagTable<keyof Options> = {
  "-f": "file",
  "--filename": "file",
  "--block-devices": "blockDevices",
  "--nodes": "nodes",
  "-n": "namespace",
  "--namespace": "namespace",
};

function parseArgs(argv: readonly string[]): Options | "help" {
  const given = parseFileFlags(argv, FLAGS);
  return given === "help" ? given : ({ namespace: "openebs", ...given } as Options);
}

/** Syncs until the hooks' answer stops changing: claims bound, removals marked and then carried out. */
const MAX_SYNCS = 6;

export async function runRender(argv: readonly string[], io: ValidateIO = processIO): Promise<number> {
  let options: Options;
  let cspcs: KubeObject[];
  let cluster: KubeObject[];
  let nodes: KubeObject[] | undefined;
  let config: HookConfig;
  try {
    const parsed = parseArgs(argv);
    if (parsed === "help") {
      io.stdout(RENDER_USAGE);
      return 0;
    }
    options = parsed;
    const objects = readObjects(io, options.file);
    cspcs = objects.filter((o) => o.kind === KIND.cspc);
    const others = objects.filter((o) => o.kind !== KIND.cspc).map((o) => o.kind);
    if (others.length > 0) throw new UsageError(`${options.file} holds ${[...new Set(others)].join(", ")}; only CStorPoolClusters can be rendered`);
    if (cspcs.length === 0) throw new UsageError(`${options.file} holds no CStorPoolCluster`);
    cluster = options.blockDevices ? readObjects(io, options.blockDevices) : [];
    nodes = options.nodes ? readObjects(io, options.nodes).filter((o) => o.kind === KIND.node) : undefined;
    config = loadHookConfig(process.env);
  } catch (err) {
    if (!(err instanceof UsageError) && !(err instanceof ConfigError)) throw err;
    io.stderr(`error: ${err.message}\n\n${RENDER_USAGE}`);
    return 2;
  }

  let incomplete = false;
  const documents: string[] = [];
  for (const raw of cspcs) {
    const cspc = withDefaults(raw, options.namespace);
    const namespace = cspc.metadata.namespace!;
    const inNamespace = (o: KubeObject) => (o.metadata?.namespace ?? namespace) === namespace;
    const blockDevices = cluster.filter((o) => o.kind === KIND.blockDevice && inNamespace(o)).map((o) => withNamespace(o, namespace));
    const claims = cluster.filter((o) => o.kind === KIND.blockDeviceClaim && inNamespace(o)).map((o) => withNamespace(o, namespace));
    const cspis = cluster.filter((o) => o.kind === KIND.cspi && inNamespace(o)).map((o) => withNamespace(o, namespace));
    const ownedBy = (o: KubeObject) => o.metadata.labels?.[LABEL.cspc] === cspc.metadata.name;
    const clusterNodes = nodes ?? nodesOfDevices(blockDevices);
    if (!nodes) io.stderr(`note: no --nodes: assumed one node per host named by the BlockDevices (${clusterNodes.map((n) => n.metadata.name).join(", ") || "none"})\n`);
    if (!options.blockDevices) io.stderr("note: no --block-devices: every device is missing, so no pool can be built\n");

    let children: KubeObject[] = [...cspis.filter(ownedBy), ...claims.filter(ownedBy)];
    let answer = syncCspcRequest(parseCompositeRequest(request(cspc, children, blockDevices, claims.filter((c) => !ownedBy(c)), clusterNodes), KIND.cspc), () => new Date());
    for (let i = 1; i < MAX_SYNCS; i++) {
      const next = answer.children.map(boundAsNdmWould);
      if (canonicalJson(next) === canonicalJson(children)) break;
      children = next;
      answer = syncCspcRequest(parseCompositeRequest(request(cspc, children, blockDevices, claims.filter((c) => !ownedBy(c)), clusterNodes), KIND.cspc), () => new Date());
    }

    const renderedCspis = answer.children.filter((c) => c.kind === KIND.cspi);
    const deployments = renderedCspis.flatMap((cspi) =>
      syncCspiRequest(parseDecoratorRequest({ controller: {}, object: cspi, attachments: {}, related: {}, finalizing: false }, KIND.cspi), () => new Date(), config).attachments,
    );
    const status = answer.status as { desiredInstances?: number; conditions?: { type: string; status: string; reason: string; message: string }[] };
    const desired = status.desiredInstances ?? 0;
    if (renderedCspis.length < desired) incomplete = true;
    const header = [
      `# ${KIND.cspc} ${namespace}/${cspc.metadata.name}: ${desired} pool(s), ${renderedCspis.length} would be provisioned`,
      ...(status.conditions ?? [])
        .filter((c) => c.type === "Ready" || c.status === "True")
        .map((c) => `# ${c.type}=${c.status} (${c.reason}): ${c.message.replace(/\n/g, " ")}`),
    ].join("\n");
    documents.push(`${header}\n${[...answer.children, ...deployments].map((o) => canonicalYaml(o)).join("---\n")}`);
  }
  io.stdout(documents.join("---\n"));
  return incomplete ? 1 : 0;
}

function withNamespace(object: KubeObject, namespace: string): KubeObject {
  return { ...object, metadata: { ...object.metadata, namespace: object.metadata?.namespace ?? namespace } };
}

/** As the apiserver would hold it: a namespace, a generation. */
function withDefaults(cspc: KubeObject, namespace: string): KubeObject {
  return { ...cspc, metadata: { generation: 1, ...cspc.metadata, namespace: cspc.metadata?.namespace ?? namespace } };
}

/** Without a Node list: a node for each host the BlockDevices are attached to, labelled with its hostname. */
function nodesOfDevices(blockDevices: readonly KubeObject[]): KubeObject[] {
  const hosts = new Set<string>();
  for (const bd of blockDevices) {
    const spec = bd.spec as { nodeAttributes?: { nodeName?: string } } | undefined;
    const host = bd.metadata.labels?.[LABEL.hostname] ?? spec?.nodeAttributes?.nodeName;
    if (host) hosts.add(host);
  }
  return [...hosts].sort().map((host) => ({ apiVersion: "v1", kind: KIND.node, metadata: { name: host, labels: { [LABEL.hostname]: host } } }));
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
function request(cspc: KubeObject, children: readonly KubeObject[], blockDevices: readonly KubeObject[], otherClaims: readonly KubeObject[], nodes: readonly KubeObject[]): unknown {
  const childrenMap: ObjectMap = {
    [TYPE_KEY.cspi]: keyed(children.filter((c) => c.kind === KIND.cspi)),
    [TYPE_KEY.blockDeviceClaim]: keyed(children.filter((c) => c.kind === KIND.blockDeviceClaim)),
  };
  const related: ObjectMap = {
    [TYPE_KEY.blockDevice]: keyed(blockDevices),
    [TYPE_KEY.blockDeviceClaim]: keyed([...otherClaims, ...children.filter((c) => c.kind === KIND.blockDeviceClaim)]),
    [TYPE_KEY.node]: Object.fromEntries(nodes.map((n) => [n.metadata.name!, n])),
  };
  return { controller: { apiVersion: "metacontroller.k8s.io/v1alpha1", kind: "CompositeController" }, parent: cspc, children: childrenMap, related, finalizing: false };
}
