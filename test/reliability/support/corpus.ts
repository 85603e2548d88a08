// Seed requests for fuzzing, per endpoint: the real golden requests of test/fixtures/<area>/ (whole, or a world
// plus a patch), plus requests derived from them where an endpoint has no golden files of its own
// (customize, admission).
import { existsSync } from "node:fs";
import type { KubeObject } from "../../../api/types.js";
import { goldenCases } from "../../support/golden.js";
import type { Json } from "./mutate.js";

function requestsOf(area: string): Json[] {
  return goldenCases(area)
    .filter((c) => c.has("request.yaml"))
    .map((c) => JSON.parse(JSON.stringify(c.read("request.yaml"))) as Json);
}

function parentsOf(requests: Json[]): KubeObject[] {
  return requests.map((r) => (r as { parent: KubeObject }).parent).filter(Boolean);
}

function admissionReviews(cspcRequests: Json[]): Json[] {
  const reviews: Json[] = [];
  parentsOf(cspcRequests).forEach((cspc, i) => {
    const request = (operation: string, object: KubeObject | null, oldObject: KubeObject | null) =>
      ({
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request: {
          uid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
          kind: { group: "openebs.io", version: "v1alpha1", kind: "CStorPoolCluster" },
          resource: { group: "openebs.io", version: "v1alpha1", resource: "cstorpoolclusters" },
          operation,
          name: cspc.metadata.name,
          namespace: cspc.metadata.namespace,
          object,
          oldObject,
          userInfo: { username: "admin" },
          dryRun: false,
        },
      }) as unknown as Json;
    reviews.push(request("CREATE", cspc, null), request("UPDATE", cspc, cspc), request("DELETE", null, cspc));
  });
  return reviews;
}

/** The objects a cluster would hold for the admission lookups: what the golden cspc-sync requests observed. */
export function clusterObjects(cspcRequests: Json[]): KubeObject[] {
  const seen = new Map<string, KubeObject>();
  for (const r of cspcRequests as {
    children?: Record<string, Record<string, KubeObject>>;
    related?: Record<string, Record<string, KubeObject>>;
  }[]) {
    for (const map of [r.children ?? {}, r.related ?? {}]) {
      for (const objects of Object.values(map)) {
        for (const o of Object.values(objects ?? {}))
          seen.set(`${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`, o);
      }
    }
  }
  return [...seen.values()];
}

/** Golden request areas, by the route name that serves them. */
const AREA_OF_ROUTE: Record<string, string> = {
  "cspc-sync": "cspc-sync",
  "cspc-finalize": "cspc-finalize",
  "cspi-sync": "cspi-sync",
  "cspi-finalize": "cspi-finalize",
  "cvc-sync": "cvc-sync",
  "cvc-finalize": "cvc-finalize",
  "cv-status": "cv-status",
};

export interface Corpus {
  /** Seeds per route name; a route with no entry has no corpus, which the fuzz suite reports as a failure. */
  byRoute: Map<string, Json[]>;
  /** Every seed of every route: sent to the wrong endpoint, they must be refused with a 400. */
  all: Json[];
  cspcSyncRequests: Json[];
}

export function loadCorpus(): Corpus {
  const byRoute = new Map<string, Json[]>();
  for (const [route, area] of Object.entries(AREA_OF_ROUTE)) {
    if (existsSync(new URL(`../../fixtures/${area}/`, import.meta.url))) byRoute.set(route, requestsOf(area));
  }
  const cspcSyncRequests = byRoute.get("cspc-sync") ?? [];
  byRoute.set(
    "cspc-customize",
    parentsOf(cspcSyncRequests).map(
      (parent) =>
        ({
          controller: { kind: "CompositeController", metadata: { name: "cstor-pool-cluster" } },
          parent,
        }) as unknown as Json,
    ),
  );
  byRoute.set("admission-cspc", admissionReviews(cspcSyncRequests));
  // A decorator's customize request: its sync requests' objects as parents.
  const decoratorCustomize = (syncRoute: string, controller: string) =>
    (byRoute.get(syncRoute) ?? []).map((r) => ({
      controller: { kind: "DecoratorController", metadata: { name: controller } },
      parent: (r as { object: Json }).object,
    }));
  byRoute.set("cspi-customize", decoratorCustomize("cspi-sync", "cstor-pool-instance"));
  byRoute.set(
    "cvc-customize",
    parentsOf(byRoute.get("cvc-sync") ?? []).map(
      (parent) =>
        ({
          controller: { kind: "CompositeController", metadata: { name: "cstor-volume-config" } },
          parent,
        }) as unknown as Json,
    ),
  );
  byRoute.set("cv-customize", decoratorCustomize("cv-status", "cstor-volume"));
  return { byRoute, all: [...byRoute.values()].flat(), cspcSyncRequests };
}
