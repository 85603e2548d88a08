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
  const params = error.params as Record<string, unknown>;
  // A branch of an enum-like anyOf failing: reported once, by the anyOf that lists the allowed values.
  if (error.schemaPath.includes("/anyOf/")) return undefined;
  switch (error.keyword) {
    case "anyOf": {
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
    case "additionalProperties": {
      const field = String(params.additionalProperty);
      const known = Object.keys(
        (error.parentSchema as { properties?: object } | undefined)?.properties ?? {},
      );
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
    case "pattern": {
      // The field's description says the form in words; the regular expression alone tells a person little.
      const description = (error.parentSchema as { description?: string } | undefined)?.description;
      return `is ${JSON.stringify(error.data)}, which does not have the form ${String(params.pattern)}${description ? `: ${description}` : ""}`;
    }
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
