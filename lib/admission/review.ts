// AdmissionReview admission.k8s.io/v1: the request the API server sends and the response it expects back.
// Only the fields this webhook reads or writes; the response always echoes request.uid.
import type { KubeObject } from "../../api/types.js";
import { BadRequestError } from "../errors.js";
import { isKubeObject, isRecord, jsonKind } from "../request.js";

export const ADMISSION_API_VERSION = "admission.k8s.io/v1";

export type Operation = "CREATE" | "UPDATE" | "DELETE" | "CONNECT";

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  operation: Operation;
  name?: string;
  namespace?: string;
  object?: KubeObject | null;
  oldObject?: KubeObject | null;
  dryRun?: boolean;
}

export interface AdmissionStatus {
  code: number;
  reason: string;
  message: string;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: AdmissionStatus & { status: "Failure" };
  warnings?: string[];
}

export interface AdmissionReview {
  apiVersion: typeof ADMISSION_API_VERSION;
  kind: "AdmissionReview";
  response: AdmissionResponse;
}

const OPERATIONS: readonly string[] = ["CREATE", "UPDATE", "DELETE", "CONNECT"] satisfies Operation[];

/** The request of an AdmissionReview v1; anything else is a 400 naming what is wrong. */
export function parseAdmissionReview(body: unknown): AdmissionRequest {
  const request = reviewRequest(body);
  if (typeof request.uid !== "string" || request.uid === "")
    throw new BadRequestError("AdmissionReview request has no uid");
  const operation = request.operation;
  if (!isOperation(operation)) {
    throw new BadRequestError(
      `AdmissionReview request operation ${JSON.stringify(operation ?? null)} is not one of ${OPERATIONS.join(", ")}`,
    );
  }
  const kind = request.kind;
  if (!isRecord(kind) || typeof kind.kind !== "string")
    throw new BadRequestError("AdmissionReview request has no kind");
  const parsed: AdmissionRequest = {
    uid: request.uid,
    kind: { group: stringOr(kind.group), version: stringOr(kind.version), kind: kind.kind },
    operation,
    object: objectOf(request, "object"),
    oldObject: objectOf(request, "oldObject"),
  };
  if (typeof request.name === "string") parsed.name = request.name;
  if (typeof request.namespace === "string") parsed.namespace = request.namespace;
  if (typeof request.dryRun === "boolean") parsed.dryRun = request.dryRun;
  return parsed;
}

/** The request of a body that is an AdmissionReview v1, not yet checked itself. */
function reviewRequest(body: unknown): Record<string, unknown> {
  if (!isRecord(body))
    throw new BadRequestError(
      `request body is ${jsonKind(body)}; it must be a JSON object (an AdmissionReview)`,
    );
  if (body.kind !== "AdmissionReview" || body.apiVersion !== ADMISSION_API_VERSION) {
    throw new BadRequestError(
      `request body is a ${JSON.stringify(body.kind ?? null)} of ${JSON.stringify(body.apiVersion ?? null)}; this webhook serves AdmissionReview ${ADMISSION_API_VERSION}: set admissionReviewVersions: ["v1"] in the ValidatingWebhookConfiguration`,
    );
  }
  const request = body.request;
  if (!isRecord(request)) throw new BadRequestError("AdmissionReview has no request");
  return request;
}

function isOperation(value: unknown): value is Operation {
  return typeof value === "string" && OPERATIONS.includes(value);
}

function stringOr(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** request.object or request.oldObject: absent (null) or a Kubernetes object whose name and namespace are strings. */
function objectOf(request: Record<string, unknown>, field: "object" | "oldObject"): KubeObject | null {
  const obj = request[field];
  if (obj === undefined || obj === null) return null;
  if (!isRecord(obj) || !isRecord(obj.metadata))
    throw new BadRequestError(`AdmissionReview request.${field} is not a Kubernetes object`);
  for (const key of ["name", "namespace"] as const) {
    if (obj.metadata[key] !== undefined && typeof obj.metadata[key] !== "string")
      throw new BadRequestError(`AdmissionReview request.${field}.metadata.${key} must be a string`);
  }
  if (!isKubeObject(obj))
    throw new BadRequestError(
      `AdmissionReview request.${field} is not a Kubernetes object (apiVersion, kind and metadata)`,
    );
  return obj;
}

export interface Verdict {
  allowed: boolean;
  /** Set when allowed is false. */
  status?: AdmissionStatus;
  warnings: string[];
}

export function reviewResponse(uid: string, verdict: Verdict): AdmissionReview {
  const response: AdmissionResponse = { uid, allowed: verdict.allowed };
  if (!verdict.allowed && verdict.status) response.status = { ...verdict.status, status: "Failure" };
  if (verdict.warnings.length > 0) response.warnings = verdict.warnings;
  return { apiVersion: ADMISSION_API_VERSION, kind: "AdmissionReview", response };
}
