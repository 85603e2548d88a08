// Request mutations for fuzzing the hooks: start from a real golden request and break it the ways a buggy
// client, a hand-written curl or a corrupted proxy would. Structural mutations work on the parsed JSON
// (delete, null, wrong type, huge and odd strings, deep nesting, wrong kinds, copies of other subtrees);
// text mutations work on the bytes (truncation, duplicate keys, stray bytes).
import fc from "fast-check";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Path = (string | number)[];

/** Every path in a JSON document, root first, in a stable order. */
export function pathsOf(value: Json, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix);
  if (Array.isArray(value)) value.forEach((item, i) => pathsOf(item, [...prefix, i], out));
  else if (value !== null && typeof value === "object")
    for (const key of Object.keys(value)) pathsOf(value[key], [...prefix, key], out);
  return out;
}

function getAt(root: Json, path: Path): Json | undefined {
  let cur: Json | undefined = root;
  for (const step of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string | number, Json>)[step];
  }
  return cur;
}

/** Replaces (or, with `undefined`, deletes) the value at `path`; the root cannot be deleted, only replaced. */
function setAt(root: Json, path: Path, value: Json | undefined): Json {
  if (path.length === 0) return value === undefined ? {} : value;
  const parent = getAt(root, path.slice(0, -1));
  const last = path[path.length - 1];
  if (Array.isArray(parent)) {
    if (value === undefined) parent.splice(last as number, 1);
    else parent[last as number] = value;
  } else if (parent !== null && typeof parent === "object") {
    if (value === undefined) delete parent[last as string];
    else parent[last as string] = value;
  }
  return root;
}

/** A value of the wrong type for what was there, but "close" to it: the mistakes a client actually makes. */
function retyped(value: Json | undefined): Json {
  if (typeof value === "string") return /^-?\d+$/.test(value) ? Number(value) : [value];
  if (typeof value === "number") return String(value);
  if (typeof value === "boolean") return value ? "true" : 0;
  if (Array.isArray(value)) return Object.fromEntries(value.map((v, i) => [String(i), v]));
  if (value !== null && typeof value === "object") return Object.values(value);
  return "null";
}

// Deep nesting is spliced into the request text, since JSON.stringify itself overflows the stack on it.
// eslint-disable-next-line no-control-regex -- NUL delimits the marker so no JSON text can forge it
const DEEP_MARKER = /"\u0000deep:(\d+):(object|array)\u0000"/g;

function nested(depth: number, asObject: boolean): Json {
  return `\u0000deep:${depth}:${asObject ? "object" : "array"}\u0000`;
}

/** The request text of a mutated document. */
export function render(doc: Json): string {
  return JSON.stringify(doc).replace(DEEP_MARKER, (_m, depth: string, shape: string) => {
    const n = Number(depth);
    return shape === "object" ? '{"a":'.repeat(n) + "1" + "}".repeat(n) : "[".repeat(n) + "1" + "]".repeat(n);
  });
}

const KINDS = [
  "CStorPoolCluster",
  "CStorPoolInstance",
  "BlockDevice",
  "BlockDeviceClaim",
  "Deployment",
  "Node",
  "Pod",
  "",
  "cstorpoolcluster",
];

/** Strings that break naive code: huge, empty, unicode edge cases, path tricks, shell metacharacters. */
const oddString: fc.Arbitrary<string> = fc.oneof(
  fc.constant(""),
  fc.constant("x".repeat(200_000)),
  fc.constant("\u0000"),
  fc.constant("\ud800"),
  fc.constant("\u202e\ufeffé\u0301👩‍👩‍👧"),
  fc.constant("../../etc/passwd"),
  fc.constant("/dev/sda; rm -rf /"),
  fc.constant("__proto__"),
  fc.constant("constructor"),
  fc.constant("toString"),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ maxLength: 20 }),
);

const oddNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(-1, 0, -0, 1.5, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e308, 5e-324),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** A replacement value: what the structural mutations put in place of the original. */
type Replacement = (original: Json | undefined, doc: Json, pick: number) => Json | undefined;

const replacements: fc.Arbitrary<{ name: string; replace: Replacement }> = fc.oneof(
  fc.constant({ name: "delete", replace: () => undefined }),
  fc.constant({ name: "null", replace: () => null }),
  fc.constant({ name: "retype", replace: (original: Json | undefined) => retyped(original) }),
  oddString.map((s) => ({ name: "odd string", replace: () => s })),
  oddNumber.map((n) => ({ name: "odd number", replace: () => n })),
  fc.constantFrom(true, false, [], {}).map((v) => ({ name: "constant", replace: () => structuredClone(v) })),
  fc.jsonValue({ maxDepth: 3 }).map((v) => ({ name: "random json", replace: () => v as Json })),
  fc
    .tuple(fc.constantFrom(64, 5_000, 200_000), fc.boolean())
    .map(([depth, asObject]) => ({ name: `nested ${depth} deep`, replace: () => nested(depth, asObject) })),
  fc.constantFrom(...KINDS).map((kind) => ({
    name: "wrong kind",
    replace: (original: Json | undefined) =>
      original !== null && typeof original === "object" && !Array.isArray(original)
        ? { ...original, kind }
        : kind,
  })),
  // Another part of the same request in this place: a CSPI where a claim was, a device list in a pool, ...
  fc.constant({
    name: "copy of another subtree",
    replace: (_original: Json | undefined, doc: Json, pick: number) => {
      const all = pathsOf(doc);
      return structuredClone(getAt(doc, all[pick % all.length]) ?? null);
    },
  }),
);

export interface Mutation {
  describe: string;
  apply(doc: Json): Json;
}

/** One structural mutation at a random place in the document. */
export const structuralMutation: fc.Arbitrary<Mutation> = fc
  .tuple(fc.nat(), fc.nat(), replacements)
  .map(([where, pick, { name, replace }]) => ({
    describe: `${name} at #${where}`,
    apply(doc: Json): Json {
      const all = pathsOf(doc);
      const path = all[where % all.length];
      return setAt(doc, path, replace(getAt(doc, path), doc, pick));
    },
  }));

/**
 * A mutation that keeps the request's shape (a string stays a string, a list stays a list), so it gets past
 * the type checks and into the hook's logic: another value of the same request in this place (a device name
 * swapped for another, a node for another), an odd value of the same type, a list element dropped, doubled
 * or reordered, an object field removed, a boolean flipped.
 */
export const shapeKeepingMutation: fc.Arbitrary<Mutation> = fc
  .tuple(fc.nat(), fc.nat(), fc.nat({ max: 3 }), oddString, oddNumber)
  .map(([where, pick, variant, odd, number]) => ({
    describe: `shape-keeping edit ${variant} at #${where}`,
    apply(doc: Json): Json {
      const all = pathsOf(doc);
      const path = all[where % all.length];
      const value = getAt(doc, path);
      const sameType = all
        .map((p) => getAt(doc, p))
        .filter((v) => typeof v === typeof value && Array.isArray(v) === Array.isArray(value));
      const other = structuredClone(sameType[pick % sameType.length] ?? null);
      if (typeof value === "string") return setAt(doc, path, variant === 0 ? odd : other);
      if (typeof value === "number") return setAt(doc, path, variant === 0 ? number : other);
      if (typeof value === "boolean") return setAt(doc, path, !value);
      if (Array.isArray(value)) {
        if (value.length === 0) return doc;
        const i = pick % value.length;
        if (variant === 0) value.splice(i, 1);
        else if (variant === 1) value.push(structuredClone(value[i]!));
        else value.reverse();
        return doc;
      }
      if (value !== null && typeof value === "object" && path.length > 0) {
        const keys = Object.keys(value);
        if (variant <= 1 && keys.length > 0) delete value[keys[pick % keys.length]];
        else return setAt(doc, path, other);
      }
      return doc;
    },
  }));

export interface TextMutation {
  describe: string;
  apply(text: string): string;
}

/** Mutations of the request's bytes; most make it invalid JSON, some keep it valid but surprising. */
export const textMutation: fc.Arbitrary<TextMutation> = fc.oneof(
  fc.nat().map((at) => ({
    describe: `truncated at ${at}`,
    apply: (t: string) => t.slice(0, at % Math.max(1, t.length)),
  })),
  fc
    .tuple(
      fc.nat(),
      fc.constantFrom(
        '"kind":"Pod"',
        '"parent":null',
        '"spec":{}',
        '"metadata":7',
        '"children":[]',
        '"object":"x"',
      ),
    )
    .map(([at, pair]) => ({
      // A duplicate key after an existing one wins in JSON.parse, exactly as in Go's decoder: the late value is the one used.
      describe: `duplicate key ${pair} in object #${at}`,
      apply: (t: string) => {
        const closers = [...t.matchAll(/}/g)].map((m) => m.index);
        if (closers.length === 0) return t;
        const i = closers[at % closers.length];
        const open = t.lastIndexOf("{", i);
        const empty = t.slice(open + 1, i).trim() === "";
        return `${t.slice(0, i)}${empty ? "" : ","}${pair}${t.slice(i)}`;
      },
    })),
  fc
    .tuple(
      fc.nat(),
      fc.constantFrom(
        "\u0000",
        "\ufeff",
        "}",
        "]",
        ",",
        '"',
        "\\",
        "\u00ff",
        "NaN",
        "Infinity",
        "undefined",
        "01",
      ),
    )
    .map(([at, bytes]) => ({
      describe: `inserted ${JSON.stringify(bytes)} at ${at}`,
      apply: (t: string) => {
        const i = at % Math.max(1, t.length);
        return t.slice(0, i) + bytes + t.slice(i);
      },
    })),
  fc.constantFrom("", " ", "null", "[]", "0", '"x"', "true", "{}", "{".repeat(100_000)).map((text) => ({
    describe: `body ${JSON.stringify(text.slice(0, 12))}`,
    apply: () => text,
  })),
);
