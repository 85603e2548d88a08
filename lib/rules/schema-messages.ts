// Ajv's schema errors in words: the field as a person writes it and what is wrong with its value. Shared by
// the CSPC structural check (admission-shape.ts) and the node daemon's CSPI check, both against api/schema.ts.
import type { ErrorObject } from "ajv";

export interface WordedError {
  error: ErrorObject;
  text: string;
}

/** Every problem once, in words: the failed branches of an enum fold into the one error that lists its values. */
export function wordedErrors(errors: readonly ErrorObject[]): WordedError[] {
  const byPath = new Map<string, ErrorObject[]>();
  for (const e of errors) byPath.set(e.instancePath, [...(byPath.get(e.instancePath) ?? []), e]);
  return errors.flatMap((error) => {
    const text = describeSchemaError(error, byPath.get(error.instancePath) ?? []);
    return text ? [{ error, text }] : [];
  });
}

/** ("/pools/0/raidGroups/1", "spec") → "spec.pools[0].raidGroups[1]" */
export function fieldPath(instancePath: string, root: string): string {
  return instancePath
    .split("/")
    .slice(1)
    .reduce(
      (path, part) =>
        /^\d+$/.test(part) ? `${path}[${part}]` : `${path}.${part.replace(/~1/g, "/").replace(/~0/g, "~")}`,
      root,
    );
}

/** What is wrong with the value at an error's path, worded for a person; undefined when a sibling error says it. */
export function describeSchemaError(
  error: ErrorObject,
  siblings: readonly ErrorObject[],
): string | undefined {
  // A branch of an enum-like anyOf failing: reported once, by the anyOf that lists the allowed values.
  if (error.schemaPath.includes("/anyOf/")) return undefined;
  const describe = WORDING.get(error.keyword);
  return describe ? describe(error, params(error), siblings) : (error.message ?? "is not valid");
}

function params(error: ErrorObject): Record<string, unknown> {
  return error.params as Record<string, unknown>;
}

type Describer = (
  error: ErrorObject,
  params: Record<string, unknown>,
  siblings: readonly ErrorObject[],
) => string;

/** The words for each schema keyword whose error a person should read in the field's terms. */
const WORDING: ReadonlyMap<string, Describer> = new Map<string, Describer>([
  ["anyOf", describeAnyOf],
  ["additionalProperties", describeUnknownField],
  ["required", (_error, p) => `has no ${String(p.missingProperty)}: it is required`],
  ["type", (_error, p) => `must be ${TYPE_WORDS.get(String(p.type)) ?? `a ${String(p.type)}`}`],
  ["minItems", (_error, p) => `needs at least ${String(p.limit)} item${p.limit === 1 ? "" : "s"}`],
  [
    "maxItems",
    (error, p) => `has ${(error.data as unknown[]).length} items; at most ${String(p.limit)} are supported`,
  ],
  ["minProperties", (_error, p) => `needs at least ${String(p.limit)} entr${p.limit === 1 ? "y" : "ies"}`],
  [
    "minLength",
    (_error, p) => (p.limit === 1 ? "must not be empty" : `must be at least ${String(p.limit)} characters`),
  ],
  ["pattern", describePattern],
  ["maxLength", (_error, p) => `must be at most ${String(p.limit)} characters`],
  ["minimum", (error, p) => `is ${String(error.data)}, it must be at least ${String(p.limit)}`],
  ["maximum", (error, p) => `is ${String(error.data)}, it must be at most ${String(p.limit)}`],
]);

const TYPE_WORDS: ReadonlyMap<string, string> = new Map([
  ["integer", "an integer"],
  ["object", "an object"],
  ["array", "a list"],
]);

/** An enum-like anyOf: the value against the allowed values its failed const branches list. */
function describeAnyOf(error: ErrorObject, _params: unknown, siblings: readonly ErrorObject[]): string {
  const allowed = siblings
    .filter((e) => e.keyword === "const")
    .map((e) => String((e.params as { allowedValue: unknown }).allowedValue));
  if (allowed.length === 0) return "has a value of the wrong kind";
  // YAML 1.1 (kubectl's) reads a bare off/on as a boolean: a CSPC written `compression: off` lands here.
  const quote =
    typeof error.data === "boolean"
      ? ` (YAML reads a bare ${error.data ? "on" : "off"} as ${error.data}: quote it, "${error.data ? "on" : "off"}")`
      : "";
  return `is ${JSON.stringify(error.data)}, it must be one of ${allowed.join(", ")}${quote}`;
}

function describeUnknownField(error: ErrorObject, p: Record<string, unknown>): string {
  const field = String(p.additionalProperty);
  const known = Object.keys((error.parentSchema as { properties?: object } | undefined)?.properties ?? {});
  const near = known.find((k) => k.toLowerCase() === field.toLowerCase());
  return `has an unknown field ${field}: ${near ? `did you mean ${near}?` : `remove it (known fields: ${known.join(", ")})`}`;
}

function describePattern(error: ErrorObject, p: Record<string, unknown>): string {
  // The field's description says the form in words; the regular expression alone tells a person little.
  const description = (error.parentSchema as { description?: string } | undefined)?.description;
  return `is ${JSON.stringify(error.data)}, which does not have the form ${String(p.pattern)}${description ? `: ${description}` : ""}`;
}
