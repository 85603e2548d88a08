// The webhook's ClusterLookup against the Kubernetes API (@kubernetes/client-node 1.4). Each call carries the
// review's AbortSignal, so the deadline of gatherFacts really stops the HTTP request; failures become
// LookupErrors that say what to check (RBAC, a missing CRD, credentials).
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  Observable,
  type ConfigurationOptions,
  type ObservableMiddleware,
} from "@kubernetes/client-node";
import { GROUP, LABEL, VERSION } from "../../api/constants.js";
import type { BlockDevice, BlockDeviceClaim, CSPI, CVR, KubeObject } from "../../api/types.js";
import { GENERIC_HINT, LookupError, type ClusterLookup } from "../../lib/admission/lookup.js";

export interface Resource {
  /** For messages: "BlockDevices". */
  title: string;
  /** For RBAC: "blockdevices.openebs.io". */
  rbac: string;
  plural?: string;
  /** How to install the resource's CRD, for a 404. */
  install?: string;
}

export const RESOURCES = {
  blockDevices: {
    title: "BlockDevices",
    rbac: `blockdevices.${GROUP}`,
    plural: "blockdevices",
    install: "install NDM, or apply metacontroller/crds/ndm",
  },
  claims: {
    title: "BlockDeviceClaims",
    rbac: `blockdeviceclaims.${GROUP}`,
    plural: "blockdeviceclaims",
    install: "install NDM, or apply metacontroller/crds/ndm",
  },
  cspis: {
    title: "CStorPoolInstances",
    rbac: `cstorpoolinstances.${GROUP}`,
    plural: "cstorpoolinstances",
    install: "apply metacontroller/crds",
  },
  replicas: {
    title: "CStorVolumeReplicas",
    rbac: `cstorvolumereplicas.${GROUP}`,
    plural: "cstorvolumereplicas",
    install: "apply metacontroller/crds",
  },
  nodes: { title: "Nodes", rbac: "nodes" },
} satisfies Record<string, Resource>;

export class KubeClusterLookup implements ClusterLookup {
  private readonly custom: CustomObjectsApi;
  private readonly core: CoreV1Api;

  constructor(config: KubeConfig) {
    this.custom = config.makeApiClient(CustomObjectsApi);
    this.core = config.makeApiClient(CoreV1Api);
  }

  /** In a pod: the pod's ServiceAccount; elsewhere: $KUBECONFIG or ~/.kube/config. */
  static fromDefaultConfig(): KubeClusterLookup {
    const config = new KubeConfig();
    config.loadFromDefault();
    return new KubeClusterLookup(config);
  }

  blockDevices(namespace: string, signal: AbortSignal): Promise<BlockDevice[]> {
    return this.listCustom(RESOURCES.blockDevices, namespace, undefined, signal) as Promise<BlockDevice[]>;
  }

  blockDeviceClaims(namespace: string, signal: AbortSignal): Promise<BlockDeviceClaim[]> {
    return this.listCustom(RESOURCES.claims, namespace, undefined, signal) as Promise<BlockDeviceClaim[]>;
  }

  poolInstances(namespace: string, cspc: string, signal: AbortSignal): Promise<CSPI[]> {
    return this.listCustom(RESOURCES.cspis, namespace, `${LABEL.cspc}=${cspc}`, signal) as Promise<CSPI[]>;
  }

  volumeReplicas(namespace: string, cspc: string, signal: AbortSignal): Promise<CVR[]> {
    return this.listCustom(RESOURCES.replicas, namespace, `${LABEL.cspc}=${cspc}`, signal) as Promise<CVR[]>;
  }

  async nodes(signal: AbortSignal): Promise<KubeObject[]> {
    try {
      const list = await this.core.listNode({}, withSignal(signal));
      // Only name and labels matter; plain objects keep the rest of the code free of client classes and Dates.
      return list.items.map((node) => ({
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: node.metadata?.name ?? "", labels: { ...node.metadata?.labels } },
      }));
    } catch (err) {
      throw explain(err, RESOURCES.nodes, undefined);
    }
  }

  private async listCustom(
    resource: Resource,
    namespace: string,
    labelSelector: string | undefined,
    signal: AbortSignal,
  ): Promise<unknown[]> {
    try {
      const list = (await this.custom.listNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace,
          plural: resource.plural!,
          ...(labelSelector ? { labelSelector } : {}),
        },
        withSignal(signal),
      )) as { items?: unknown[] };
      return list.items ?? [];
    } catch (err) {
      throw explain(err, resource, namespace);
    }
  }
}

/** Per-call options that put the review's signal on the HTTP request (the object-parameter API runs Observable middleware). */
function withSignal(signal: AbortSignal): ConfigurationOptions {
  const middleware: ObservableMiddleware = {
    pre: (context) => {
      context.setSignal(signal);
      return new Observable(Promise.resolve(context));
    },
    post: (context) => new Observable(Promise.resolve(context)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: "append" };
}

/** An API failure as a LookupError: what we tried, the API server's words, and the one thing to check. */
export function explain(err: unknown, resource: Resource, namespace: string | undefined): LookupError {
  const where = namespace ? ` in namespace ${namespace}` : "";
  const attempted = `list ${resource.title}${where}`;
  if (err instanceof ApiException) return explainAnswer(err, resource, namespace, attempted);
  if (err instanceof Error && (err.name === "AbortError" || err.name === "TimeoutError")) {
    return new LookupError(attempted, "cancelled at the review's deadline", GENERIC_HINT);
  }
  const cause =
    err instanceof Error ? ((err as { cause?: { code?: string } }).cause?.code ?? err.message) : String(err);
  return new LookupError(
    attempted,
    `the API server could not be reached (${cause})`,
    "check that the webhook pod can reach the API server (network policy, proxy settings), then retry",
  );
}

/** The API server answered the list with an error status: what it means for the webhook, and the fix. */
function explainAnswer(
  err: ApiException<unknown>,
  resource: Resource,
  namespace: string | undefined,
  attempted: string,
): LookupError {
  const said = apiMessage(err.body);
  switch (err.code) {
    case 401:
      return new LookupError(
        attempted,
        "the API server refused the webhook's credentials (401)",
        "check the webhook pod's ServiceAccount token, then retry",
      );
    case 403: {
      const canI = `kubectl auth can-i list ${resource.rbac}${namespace ? ` -n ${namespace}` : ""} --as system:serviceaccount:<webhook namespace>:<webhook service account>`;
      return new LookupError(
        attempted,
        `forbidden (403)${said ? `: ${said}` : ""}`,
        `grant the webhook's ServiceAccount list on ${resource.rbac} (check with: ${canI})`,
      );
    }
    case 404:
      return new LookupError(
        attempted,
        `the API server does not serve ${resource.rbac} (404)`,
        resource.install ? `its CustomResourceDefinition is missing: ${resource.install}` : GENERIC_HINT,
      );
    default:
      return new LookupError(
        attempted,
        `the API server answered ${err.code}${said ? `: ${said}` : ""}`,
        GENERIC_HINT,
      );
  }
}

function apiMessage(body: unknown): string | undefined {
  let value = body;
  if (typeof body === "string") {
    try {
      value = JSON.parse(body);
    } catch {
      return body.slice(0, 300);
    }
  }
  const message = (value as { message?: unknown } | undefined)?.message;
  return typeof message === "string" ? message : undefined;
}
