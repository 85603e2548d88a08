// The structural check the API server does from the CRD's OpenAPI schema, for input that has not been through
// an API server (the CLI's files) and as a guard in the webhook: the rules that follow assume a well-formed
// spec. Same schema (api/schema.ts), so the same fields, enums and bounds; messages say field and fix.
import { Ajv, type ErrorObject } from "ajv";
import { fieldPath, wordedErrors } from "./schema-messages.js";
import { KIND, LIMITS } from "../../api/constants.js";
import { CSPCSpecSchema } from "../../api/schema.js";
import { unsupportedValue, type EnumField, type Violation } from "./pool-spec.js";
import type { PoolSpec } from "../../api/types.js";

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false, verbose: true });
const validateSpec = ajv.compile(CSPCSpecSchema);

function poolIndex(instancePath: string): number {
  const match = /^\/pools\/(\d+)/.exec(instancePath);
  return match ? Number(match[1]) : -1;
}

/** "/pools/0/poolConfig/compression", "/pools/0/raidGroups/1/type": fields whose unknown values the spec rules name. */
const RULE_JUDGED_VALUE =
  /^\/pools\/(\d+)\/(?:poolConfig\/(compression|defaultRaidGroupType)|raidGroups\/(\d+)\/type)$/;

/** Violations of the CRD's structural schema and name limit; empty when the object is well formed. */
export function checkCspcShape(object: unknown): Violation[] {
  const obj = object as { kind?: unknown; metadata?: { name?: unknown }; spec?: unknown } | undefined;
  if (!obj || typeof obj !== "object")
    return [{ pool: -1, reason: "NotAnObject", message: "the input is not a Kubernetes object" }];
  if (obj.kind !== KIND.cspc) {
    return [
      {
        pool: -1,
        reason: "WrongKind",
        message: `the object is a ${JSON.stringify(obj.kind ?? null)}, not a ${KIND.cspc}`,
      },
    ];
  }
  const out = nameViolations(obj.metadata?.name);
  if (obj.spec === undefined) {
    out.push({
      pool: -1,
      reason: "MissingSpec",
      message: "the CStorPoolCluster has no spec: add spec.pools",
    });
    return out;
  }
  if (validateSpec(obj.spec)) return out;
  return [...out, ...schemaViolations(obj.spec)];
}

function nameViolations(name: unknown): Violation[] {
  if (typeof name !== "string" || name === "") {
    return [
      { pool: -1, reason: "MissingName", message: "metadata.name is missing: name the CStorPoolCluster" },
    ];
  }
  if (name.length <= LIMITS.cspcNameLength) return [];
  return [
    {
      pool: -1,
      reason: "NameTooLong",
      message: `a CStorPoolCluster name can be at most ${LIMITS.cspcNameLength} characters: its pools are named <cspc>-<hash> and used as label values`,
    },
  ];
}

/** The errors of the last validateSpec call, on a spec it refused. */
function schemaViolations(spec: unknown): Violation[] {
  const pools = (spec as { pools?: PoolSpec[] } | null)?.pools ?? [];
  return wordedErrors(validateSpec.errors ?? []).map(
    ({ error: e, text }) =>
      ruleJudgedValue(e, pools) ?? {
        pool: poolIndex(e.instancePath),
        reason: "InvalidField",
        message: `${fieldPath(e.instancePath, "spec")} ${text}`,
      },
  );
}

/** A mistyped string of a field the spec rules judge gets their message and its hint ("did you mean lz4?"). */
function ruleJudgedValue(e: ErrorObject, pools: readonly PoolSpec[]): Violation | undefined {
  const ruled =
    e.keyword === "anyOf" && typeof e.data === "string" ? RULE_JUDGED_VALUE.exec(e.instancePath) : null;
  if (!ruled) return undefined;
  const index = Number(ruled[1]);
  const field: EnumField =
    ruled[3] !== undefined
      ? { group: Number(ruled[3]) }
      : (ruled[2] as "compression" | "defaultRaidGroupType");
  return unsupportedValue(pools[index], index, field, e.data);
}
