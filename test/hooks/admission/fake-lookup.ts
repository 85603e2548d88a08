// A ClusterLookup over a fixed list of objects, filtered the way the API server filters them (namespace,
// label selector), for tests that must not depend on a cluster. Failures are described as the API server
// would answer (an HTTP code and message, run through the real error mapping) or as a lookup that never
// answers, to exercise the deadline.
import { ApiException } from "@kubernetes/client-node";
import { KIND, LABEL } from "../../../api/constants.js";
import type { BlockDevice, BlockDeviceClaim, CSPI, CVR, KubeObject } from "../../../api/types.js";
import { explain, RESOURCES } from "../../../hooks/admission/kube-lookup.js";
import type { ClusterLookup, FactName } from "../../../lib/admission/lookup.js";

export type FailureSpec = { code: number; message: string } | "hang" | "unreachable";

export interface LookupFixture {
  objects?: KubeObject[];
  fail?: Partial<Record<FactName, FailureSpec>>;
}

export class FakeClusterLookup implements ClusterLookup {
  /** Every lookup made, in order, e.g. "blockDevices openebs". */
  readonly calls: string[] = [];

  constructor(private readonly fixture: LookupFixture = {}) {}

  blockDevices(namespace: string, signal: AbortSignal): Promise<BlockDevice[]> {
    return this.answer(
      "blockDevices",
      namespace,
      signal,
      () => this.ofKind(KIND.blockDevice, namespace) as BlockDevice[],
    );
  }

  blockDeviceClaims(namespace: string, signal: AbortSignal): Promise<BlockDeviceClaim[]> {
    return this.answer(
      "claims",
      namespace,
      signal,
      () => this.ofKind(KIND.blockDeviceClaim, namespace) as BlockDeviceClaim[],
    );
  }

  nodes(signal: AbortSignal): Promise<KubeObject[]> {
    return this.answer("nodes", undefined, signal, () => this.ofKind(KIND.node, undefined));
  }

  poolInstances(namespace: string, cspc: string, signal: AbortSignal): Promise<CSPI[]> {
    return this.answer(
      "cspis",
      namespace,
      signal,
      () =>
        this.ofKind(KIND.cspi, namespace).filter(
          (o) => o.metadata.labels?.[LABEL.cspc] === cspc,
        ) as unknown as CSPI[],
    );
  }

  volumeReplicas(namespace: string, cspc: string, signal: AbortSignal): Promise<CVR[]> {
    return this.answer(
      "replicas",
      namespace,
      signal,
      () => this.ofKind(KIND.cvr, namespace).filter((o) => o.metadata.labels?.[LABEL.cspc] === cspc) as CVR[],
    );
  }

  private ofKind(kind: string, namespace: string | undefined): KubeObject[] {
    return (this.fixture.objects ?? []).filter(
      (o) => o.kind === kind && (namespace === undefined || o.metadata.namespace === namespace),
    );
  }

  private answer<T>(
    fact: FactName,
    namespace: string | undefined,
    signal: AbortSignal,
    result: () => T,
  ): Promise<T> {
    this.calls.push(namespace ? `${fact} ${namespace}` : fact);
    const failure = this.fixture.fail?.[fact];
    const resource = RESOURCES[fact];
    if (failure === "hang") {
      return new Promise((_, reject) =>
        signal.addEventListener("abort", () => reject(explain(signal.reason, resource, namespace))),
      );
    }
    if (failure === "unreachable") {
      const err = Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } });
      return Promise.reject(explain(err, resource, namespace));
    }
    if (failure) {
      const body = JSON.stringify({
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        message: failure.message,
        code: failure.code,
      });
      return Promise.reject(
        explain(new ApiException(failure.code, "Unknown API Status Code!", body, {}), resource, namespace),
      );
    }
    return Promise.resolve(structuredClone(result()));
  }
}
