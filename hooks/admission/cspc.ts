// POST /admission/cspc: the validating webhook for CStorPoolClusters. Parse the AdmissionReview, look up only
// what the verdict needs (nothing for a metadata-only update), judge, answer with the request's uid.
import type { Logger } from "../../runtime/log.js";
import { ConfigError } from "../../lib/hook-config.js";
import { lazily } from "../../lib/lazy.js";
import {
  admissionInput,
  capWarnings,
  factsNeeded,
  isCspcReview,
  judgeCspc,
  lookupFailed,
} from "../../lib/admission/judge.js";
import { DEFAULT_LOOKUP_TIMEOUT_MS, gatherFacts, type ClusterLookup } from "../../lib/admission/lookup.js";
import { parseAdmissionReview, reviewResponse, type AdmissionReview } from "../../lib/admission/review.js";

export interface AdmissionOptions {
  /** Created on first use, so a hook server that never sees a review needs no cluster credentials. */
  lookup: () => ClusterLookup | Promise<ClusterLookup>;
  lookupTimeoutMs?: number;
}

export async function handleCspcAdmission(
  body: unknown,
  options: AdmissionOptions,
  log: Logger,
): Promise<AdmissionReview> {
  const request = parseAdmissionReview(body);
  if (!isCspcReview(request)) {
    // A misconfigured webhook must not block unrelated objects; the warning tells whoever applies them.
    return reviewResponse(request.uid, {
      allowed: true,
      warnings: [
        `the cStor admission webhook judges CStorPoolClusters only and was sent a ${request.kind.kind}: narrow the rules of its ValidatingWebhookConfiguration`,
      ],
    });
  }
  const input = admissionInput(request);
  const needs = factsNeeded(input);
  let facts = {};
  if (needs.length > 0) {
    const gathered = await gatherFacts(
      await options.lookup(),
      needs,
      { namespace: input.namespace, cspc: input.name },
      options.lookupTimeoutMs ?? DEFAULT_LOOKUP_TIMEOUT_MS,
    );
    if ("failure" in gathered) {
      log.warn("admission lookup failed", {
        uid: request.uid,
        operation: input.operation,
        error: gathered.failure.message,
      });
      return reviewResponse(request.uid, lookupFailed(input, gathered.failure));
    }
    facts = gathered.facts;
  }
  const judgement = judgeCspc(input, facts);
  log.info("admission reviewed", {
    uid: request.uid,
    operation: input.operation,
    object: `${input.namespace}/${input.name}`,
    allowed: judgement.allowed,
    reasons: [...new Set(judgement.violations.map((v) => v.reason))],
    warnings: judgement.warnings.length,
  });
  return reviewResponse(request.uid, { ...judgement, warnings: capWarnings(judgement.warnings) });
}

export const LOOKUP_TIMEOUT_ENV = "ADMISSION_LOOKUP_TIMEOUT_MS";

/** Production wiring: the Kubernetes API through the pod's ServiceAccount, the deadline from the environment. */
export function defaultAdmissionOptions(
  env: Readonly<Record<string, string | undefined>> = process.env,
): AdmissionOptions {
  const raw = env[LOOKUP_TIMEOUT_ENV]?.trim();
  if (raw && !/^[1-9][0-9]*$/.test(raw)) {
    throw new ConfigError(
      `${LOOKUP_TIMEOUT_ENV}=${JSON.stringify(raw)} is not a whole number of milliseconds: set e.g. ${LOOKUP_TIMEOUT_ENV}=${DEFAULT_LOOKUP_TIMEOUT_MS}`,
    );
  }
  // The Kubernetes client is loaded on the first review: it is 57 MB of the hook server's memory, and a
  // hook server that only serves Metacontroller never needs it (docs/benchmarks.md).
  return {
    lookup: lazily(async (): Promise<ClusterLookup> =>
      (await import("./kube-lookup.js")).KubeClusterLookup.fromDefaultConfig(),
    ),
    lookupTimeoutMs: raw ? Number(raw) : DEFAULT_LOOKUP_TIMEOUT_MS,
  };
}
