// The structural check the API server does from the CRD's OpenAPI schema, for input that has not been through
// an API server (the CLI's files) and as a guard in the webhook: the rules that follow assume a well-formed
// spec. Same schema (api/schema.ts), so the same fields, enums and bounds; messages say field and fix.
import { Ajv, type ErrorObject } from "ajv";
import { KIND, LIMITS } from "../../api/constants.js";
import { CSPCSpecSchema } from "../../api/schema.js";
import { unsupportedValue, type Violation } from "./pool-spec.js";
import type { PoolSpec } from "../../api/types.js";

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false, verbose: true });
const validateSpec = ajv.compile(CSPCSpecSchema);

/** "/pools/0/raidGroups/1" → "spec.pools[0].raidGroups[1]" */
function fieldPath(instancePath: string): string {
  return instancePath
    .split("/")
    .slice(1)
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : `${path}.${part.replace(/~1/g, "/").replace(/~0/g, "~")}`), "spec");
}

function poolIndex(instancePath: string): number {
  const match = /^\/pools\/(\d+)/.exec(instancePath);
  return match ? Number(match[1]) : -1;
}

/** "/pools/0/poolConfig/compression" → "poolConfig.compression": a field whose unknown values the spec rules name. */
const RULE_JUDGED_VALUE = /^\/pools\/(\d+)\/(poolConfig\/(?:compression|defaultRaidGroupType)|raidGroups\/\d+\/type)$/;

function describe(error: ErrorObject, siblings: readonly ErrorObject[]): string | undefined {
  const params = error.params as Record<string, unknown>;
  // A branch of an enum-like anyOf failing: reported once, by the anyOf that lists the allowed values.
  if (error.schemaPath.includes("/anyOf/")) return undefined;
  switch (error.keyword) {
    case "anyOf": {
      const allowed = siblings.filter((e) => e.keyword === "const").map((e) => String((e.params as { allowedValue: unknown }).allowedValue));
      if (allowed.length === 0) return "has a value of the wrong kind";
      // YAML 1.1 (kubectl's) reads a bare off/on as a boolean: the seed examples' `compression: off` lands here.
      const quote = typeof error.data === "boolean" ? ` (YAML reads a bare ${error.data ? "on" : "off"} as ${error.data}: quote it, "${error.data ? "on" : "off"}")` : "";
      return `is ${JSON.stringify(error.data)}, it must be one of ${allowed.join(", ")}${quote}`;
    }
    case "additionalProperties": {
      const field = String(params.additionalProperty);
      const known = Object.keys((error.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      const near = known.find((k) => k.toLowerCase() === field.toLowerCase());
      return `has an unknown field ${field}: ${near ? `did you mean ${near}?` : `remove it (known fields: ${known.join(", ")})`}`;
    }
    case "required":
      return `has no ${String(params.missingProperty)}: it is required`;
    case "type":
      return `must be ${params.type === "integer" ? "an integer" : params.type === "object" ? "an object" : params.type === "array" ? "a list" : `a ${String(params.type)}`}`;
    case "minItems":
      return `needs at least ${String(params.limit)} item${params.limit === 1 ? "" : "s"}`;
    case "maxItems":
      return `has ${(error.data as unknown[]).length} items; at most ${String(params.limit)} are supported`;
    case "minProperties":
      return `needs at least ${String(params.limit)} entr${params.limit === 1 ? "y" : "ies"}`;
    case "minLength":
      return params.limit === 1 ? "must not be empty" : `must be at least ${String(params.limit)} characters`;
    case "maxLength":
      return `must be at most ${String(params.limit)} characters`;
    case "minimum":
      return `is ${String(error.data)}, it must be at least ${String(params.limit)}`;
    case "maximum":
      return `is ${String(error.data)}, it must be at most ${String(params.limit)}`;
    default:
      return error.message ?? "is not valid";
  }
}

/** Violations of the CRD's structural schema and name limit; empty when the object is well formed. */
export function checkCspcShape(object: unknown): Violation[] {
  const obj = object as { kind?: unknown; metadata?: { name?: unknown }; spec?: unknown } | undefined;
  if (!obj || typeof obj !== "object") return [{ pool: -1, reason: "NotAnObject", message: "the input is not a Kubernetes object" }];
  const out: Violation[] = [];
  if (obj.kind !== KIND.cspc) {
    out.push({ pool: -1, reason: "WrongKind", message: `the object is a ${JSON.stringify(obj.kind ?? null)}, not a ${KIND.cspc}` });
    return out;
  }
  const name = obj.metadata?.name;
  if (typeof name !== "string" || name === "") {
    out.push({ pool: -1, reason: "MissingName", message: "metadata.name is missing: name the CStorPoolCluster" });
  } else if (name.length > LIMITS.cspcNameLength) {
    out.push({
      pool: -1,
      reason: "NameTooLong",
      message: `a CStorPoolCluster name can be at most ${LIMITS.cspcNameLength} characters: its pools are named <cspc>-<hash> and used as label values`,
    });
  }
  if (obj.spec === undefined) {
    out.push({ pool: -1, reason: "MissingSpec", message: "the CStorPoolCluster has no spec: add spec.pools" });
    return out;
  }
  if (validateSpec(obj.spec)) return out;
  const errors = validateSpec.errors ?? [];
  const byPath = new Map<string, ErrorObject[]>();
  for (const e of errors) byPath.set(e.instancePath, [...(byPath.get(e.instancePath) ?? []), e]);
  const pools = (obj.spec as { pools?: PoolSpec[] }).pools ?? [];
  for (const e of errors) {
    // A mistyped string of a field the spec rules judge gets their message and its hint ("did you mean lz4?").
    const ruled = e.keyword === "anyOf" && typeof e.data === "string" ? RULE_JUDGED_VALUE.exec(e.instancePath) : null;
    if (ruled) {
      const index = Number(ruled[1]);
      const field = ruled[2]!.replace(/\//g, ".").replace(/\.(\d+)\./g, "[$1].");
      out.push(unsupportedValue(pools[index]!, index, field, e.data));
      continue;
    }
    const text = describe(e, byPath.get(e.instancePath) ?? []);
    if (text) out.push({ pool: poolIndex(e.instancePath), reason: "InvalidField", message: `${fieldPath(e.instancePath)} ${text}` });
  }
  return out;
}
