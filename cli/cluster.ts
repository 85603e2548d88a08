// The views' I/O edge: the objects of one namespace, listed from the apiserver with @kubernetes/client-node, as
// kubectl finds its cluster (--kubeconfig, else KUBECONFIG, else ~/.kube/config, else in-cluster). A failure
// says which resource could not be listed and why; nothing here decides what is shown (cli/views.ts does).
// client-node is loaded only when a view reads a cluster: validate, render and convert start without it
// (it adds about 70 MB and a second to every start).
import type { KubeConfig } from "@kubernetes/client-node";
import { GROUP, KIND, VERSION } from "../api/constants.js";
import type { KubeObject } from "../api/types.js";
import { InputError } from "./args.js";
import { clusterObjects, type ClusterObjects } from "./views.js";

/** The cluster could not be read: exit code 2, like input that cannot be read. */
export class ClusterError extends InputError {}

const clientNode = () => import("@kubernetes/client-node");

export async function loadKubeConfig(file?: string): Promise<KubeConfig> {
  const config = new (await clientNode()).KubeConfig();
  try {
    if (file) config.loadFromFile(file);
    else config.loadFromDefault();
  } catch (err) {
    throw new ClusterError(`cannot load the kubeconfig${file ? ` ${file}` : ""}: ${(err as Error).message}`);
  }
  return config;
}

/** The namespace kubectl would use: the current context's, else the install's (`openebs`). */
export function contextNamespace(config: KubeConfig): string | undefined {
  return config.getContextObject(config.getCurrentContext())?.namespace || undefined;
}

/** The project's kinds the views read, by their resource name. */
export const CUSTOM_PLURAL: Record<string, string> = {
  [KIND.cspc]: "cstorpoolclusters",
  [KIND.cspi]: "cstorpoolinstances",
  [KIND.blockDeviceClaim]: "blockdeviceclaims",
  [KIND.cvc]: "cstorvolumeconfigs",
  [KIND.cv]: "cstorvolumes",
  [KIND.cvr]: "cstorvolumereplicas",
};

/** client-node hands typed objects (Dates for times); the views read plain JSON, as files hold it. */
const plain = (items: readonly object[], kind: string): KubeObject[] =>
  items.map((item) => ({ ...(JSON.parse(JSON.stringify(item)) as KubeObject), kind }));

/** What the apiserver said, in a sentence naming the resource. */
function listFailure(resource: string, namespace: string, server: string, err: unknown): ClusterError {
  // An HTTP status; a connection failure carries a string code (ECONNREFUSED) instead.
  const status = (err as { code?: unknown }).code;
  const code = typeof status === "number" ? status : undefined;
  let said = (err as Error).message ?? String(err);
  const body = (err as { body?: unknown }).body;
  if (typeof body === "string") {
    try {
      said = (JSON.parse(body) as { message?: string }).message ?? said;
    } catch {
      // not a Status: keep the exception's message
    }
  }
  const what = `cannot list ${resource} in namespace ${namespace}`;
  if (code === 403) return new ClusterError(`${what}: forbidden (${said}); ask for list on ${resource}`);
  if (code === 401)
    return new ClusterError(`${what}: the apiserver at ${server} did not accept the credentials (${said})`);
  if (code === 404)
    return new ClusterError(
      `${what}: the apiserver at ${server} does not serve it (are the CRDs in metacontroller/crds installed?)`,
    );
  if (code === undefined)
    return new ClusterError(`${what}: cannot reach the apiserver at ${server}: ${said}`);
  return new ClusterError(`${what}: ${code} ${said}`);
}

/** The objects of the given kinds (of cli/views.ts VIEW_KINDS) in one namespace. */
export async function listFromCluster(
  config: KubeConfig,
  namespace: string,
  kinds: readonly string[],
): Promise<ClusterObjects> {
  const { AppsV1Api, CoreV1Api, CustomObjectsApi } = await clientNode();
  const custom = config.makeApiClient(CustomObjectsApi);
  const core = config.makeApiClient(CoreV1Api);
  const apps = config.makeApiClient(AppsV1Api);
  const server = config.getCurrentCluster()?.server ?? "(no server in the kubeconfig)";
  const list = async (kind: string): Promise<KubeObject[]> => {
    const plural = CUSTOM_PLURAL[kind];
    const resource = plural ? `${plural}.${GROUP}` : kind === KIND.event ? "events" : "deployments.apps";
    try {
      if (plural) {
        const listed = (await custom.listNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural,
        })) as { items: KubeObject[] };
        return listed.items;
      }
      if (kind === KIND.event) return plain((await core.listNamespacedEvent({ namespace })).items, kind);
      return plain((await apps.listNamespacedDeployment({ namespace })).items, kind);
    } catch (err) {
      throw listFailure(resource, namespace, server, err);
    }
  };
  // Every list is awaited, so the failure reported is the first kind's in order, not whichever lost the race.
  const lists = await Promise.allSettled(kinds.map(list));
  const failed = lists.find((l) => l.status === "rejected");
  if (failed) throw failed.reason;
  return clusterObjects(
    namespace,
    lists.flatMap((l) => (l.status === "fulfilled" ? l.value : [])),
  );
}
