// Deterministic output: sorted keys, no null/undefined inside objects. Used by every hook response and by
// the golden-file comparison, so "equal" always means "equal after canonicalisation".
import { stringify as yamlStringify } from "yaml";

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/**
 * Recursively sorts object keys and removes null and undefined object fields and list items (the API server
 * stores neither in a typed field, and Metacontroller's strict decoding trips on them). Throws on non-plain values.
 */
export function canonicalize(value: unknown): Json {
  if (value === null || value === undefined) return null;
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`cannot render non-finite number ${value}`);
    return value;
  }
  if (Array.isArray(value))
    return value.filter((item) => item !== null && item !== undefined).map((item) => canonicalize(item));
  if (typeof value === "object") return canonicalObject(value);
  throw new TypeError(`cannot render value of type ${typeof value}`);
}

function canonicalObject(value: object): { [key: string]: Json } {
  const proto = Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null;
  if (proto !== Object.prototype && proto !== null) {
    throw new TypeError(`cannot render non-plain object of type ${proto.constructor?.name ?? "unknown"}`);
  }
  const out: { [key: string]: Json } = {};
  const keys = Object.keys(value);
  // Most objects arrive sorted already (API server order, or canonical from an earlier step): skip the sort.
  if (!isSorted(keys)) keys.sort();
  for (const key of keys) {
    const field = (value as Record<string, unknown>)[key];
    if (field === null || field === undefined) continue;
    out[key] = canonicalize(field);
  }
  return out;
}

function isSorted(keys: readonly string[]): boolean {
  for (let i = 1; i < keys.length; i++) if (keys[i - 1] > keys[i]) return false;
  return true;
}

export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonicalize(value));
}

/** YAML that kubectl reads back identically: YAML 1.1 quoting (yes/no/on/off stay strings), no folding. */
export function canonicalYaml(value: unknown): string {
  return yamlStringify(canonicalize(value), { version: "1.1", lineWidth: 0, aliasDuplicateObjects: false });
}
