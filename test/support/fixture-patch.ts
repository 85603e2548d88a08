// Turns golden inputs into a world plus a patch (test/fixtures/README.md says when and why).
//
//   npx tsx test/support/fixture-patch.ts <case-dir>... [--world <name>] [--document <file>]
//     Each input of each case (request.yaml, review.yaml, lookups.yaml, input.yaml; whole, or a patch to
//     move to another world) becomes <stem>.patch.yaml against the named world, or against whichever world
//     gives the smallest patch.
//   npx tsx test/support/fixture-patch.ts --new-world <name> [--base <world>] --document <file> <case-dir>...
//     First writes the world test/fixtures/worlds/<name>.yaml: what most of the cases agree on (each key, each
//     object, each value); with --base, as a patch of that world. Then converts the cases against it.
//   npx tsx test/support/fixture-patch.ts --whole [--document <file>] <case-dir>...
//     Writes the inputs whole again (before editing a world: the cases built on it would change with it).
//
// Nothing is removed unless the world with the patch builds exactly the document it replaces.
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Document, YAMLMap, YAMLSeq } from "yaml";
import { canonicalize, canonicalYaml, type Json } from "../../lib/canonical.js";
import {
  documentSource,
  patchFileName,
  PATCH_SUFFIX,
  readCaseDocument,
  readWorld,
  WORLDS,
} from "../../testkit/case-documents.js";
import {
  deepEqual,
  diffMergePatch,
  identityOf,
  isKubeObject,
  type PatchValue,
} from "../../testkit/merge-patch.js";
import { GOLDEN_AREAS } from "./golden.js";

const INPUTS = [...new Set(Object.values(GOLDEN_AREAS).flatMap((area) => area.inputs))];

/** The worlds' names, from the files in test/fixtures/worlds. */
export function worldNames(): string[] {
  if (!existsSync(WORLDS)) return [];
  return readdirSync(WORLDS)
    .filter((file) => file.endsWith(".yaml"))
    .map((file) => basename(file, file.endsWith(PATCH_SUFFIX) ? PATCH_SUFFIX : ".yaml"))
    .sort();
}

const lineCount = (text: string): number => text.split("\n").length - 1;

/** `world:` first, so a reader knows what the patch applies to before reading it. */
const patchFileText = (world: string, patch: PatchValue | undefined): string =>
  `world: ${world}\n${patch === undefined ? "" : fixtureYaml({ patch })}`;

/**
 * The patch file that turns `world` into `document`; undefined if the world is another kind of document (no
 * top-level key in common) or the document holds a null (a merge patch reads null as "remove").
 */
export function patchAgainst(world: string, document: PatchValue): string | undefined {
  const base = readWorld(world) as PatchValue;
  const keys = (value: PatchValue) => (isMapValue(value) ? Object.keys(value) : []);
  if (!keys(base).some((key) => keys(document).includes(key))) return undefined;
  let patch: PatchValue | undefined;
  try {
    patch = diffMergePatch(base, document);
  } catch {
    return undefined;
  }
  return patchFileText(world, patch);
}

/**
 * Writes <case>/<stem>.patch.yaml for <case>/<document>, which is whole or already a patch (of another world,
 * or of a world since edited), and removes the whole file.
 */
export function convert(caseDir: string, document: string, world?: string): string {
  const source = documentSource(caseDir, document);
  if (!source) throw new Error(`${caseDir}: no ${document} to convert`);
  const before = readFileSync(source, "utf8");
  const original = readCaseDocument(caseDir, document) as PatchValue;
  const candidates = (world ? [world] : worldNames())
    .map((name) => ({ name, text: patchAgainst(name, original) }))
    .filter((c): c is { name: string; text: string } => c.text !== undefined)
    .sort((a, b) => lineCount(a.text) - lineCount(b.text));
  const best = candidates[0];
  if (!best) {
    throw new Error(
      `${source}: no world${world ? ` "${world}"` : ""} can build it (it holds a null, or no world is this kind of document: make one with --new-world)`,
    );
  }
  const patchPath = join(caseDir, patchFileName(document));
  rmSync(source);
  writeFileSync(patchPath, best.text);
  try {
    if (!deepEqual(readCaseDocument(caseDir, document), original))
      throw new Error("the world with the patch is not the document");
  } catch (err) {
    rmSync(patchPath);
    writeFileSync(source, before);
    throw new Error(`${source}: left as it was: ${(err as Error).message}`, { cause: err });
  }
  return `${relative(process.cwd(), patchPath)}: world ${best.name}, ${lineCount(best.text)} lines (was ${lineCount(before)})`;
}

/** Writes <case>/<document> whole, from its patch, and removes the patch: before editing the world under it. */
export function makeWhole(caseDir: string, document: string): string {
  const source = documentSource(caseDir, document);
  if (!source?.endsWith(PATCH_SUFFIX))
    return `${relative(process.cwd(), join(caseDir, document))}: whole already`;
  const whole = join(caseDir, document);
  writeFileSync(whole, canonicalYaml(readCaseDocument(caseDir, document)));
  rmSync(source);
  return `${relative(process.cwd(), whole)}: whole`;
}

/**
 * What most of the documents agree on: a key most of them have, an object (by kind, namespace and name) most
 * of their object lists hold, and of the values they hold there, the most common.
 */
export function consensus(documents: readonly PatchValue[]): PatchValue {
  const majority = (present: number) => present * 2 > documents.length;
  if (documents.every(isMapValue)) {
    const keys = [...new Set(documents.flatMap((d) => Object.keys(d)))];
    const result: Record<string, PatchValue> = {};
    for (const key of keys) {
      const present = documents.filter((d) => key in d).map((d) => d[key]!);
      if (majority(present.length)) result[key] = consensus(present);
    }
    return result;
  }
  const objectLists = documents.map((d) =>
    Array.isArray(d) && d.length > 0 && d.every(isKubeObject) ? d : undefined,
  );
  if (objectLists.every((list) => list !== undefined)) {
    const identities = [...new Set(objectLists.flatMap((list) => list.map(identityOf)))];
    return identities.flatMap((identity) => {
      const present = objectLists.flatMap((list) => list.filter((o) => identityOf(o) === identity));
      return majority(present.length) ? [consensus(present)] : [];
    });
  }
  const counts = new Map<string, { value: PatchValue; count: number }>();
  for (const d of documents) {
    const key = JSON.stringify(canonicalize(d));
    counts.set(key, { value: d, count: (counts.get(key)?.count ?? 0) + 1 });
  }
  return [...counts.values()].sort((a, b) => b.count - a.count)[0].value;
}

const isMapValue = (value: PatchValue): value is Record<string, PatchValue> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Writes worlds/<name>.yaml, the consensus of the cases' <document>; with `base`, as a patch of that world. */
export function newWorld(name: string, document: string, caseDirs: readonly string[], base?: string): string {
  const world = consensus(caseDirs.map((dir) => canonicalize(readCaseDocument(dir, document))));
  if (worldNames().includes(name)) throw new Error(`world "${name}" exists already`);
  const path = join(WORLDS, base ? `${name}${PATCH_SUFFIX}` : `${name}.yaml`);
  writeFileSync(
    path,
    base ? patchFileText(base, diffMergePatch(readWorld(base), world)) : fixtureYaml(canonicalize(world)),
  );
  return `${relative(process.cwd(), path)}: ${lineCount(fixtureYaml(world))} lines`;
}

/**
 * A fixture as YAML, keys in the order given (a world comes canonical, a patch with its keys sorted but its
 * new objects in list order), YAML 1.1 quoting like every golden file, nulls kept (in a patch they remove),
 * and an object that appears twice (a claim among both the children and the related objects of a request)
 * written once, with an anchor named after it, and referred to by alias after that.
 */
export function fixtureYaml(value: PatchValue): string {
  const canonical = value;
  // How often each shareable object occurs where it will be written (not counting those inside a repeat,
  // which becomes an alias as a whole).
  const uses = new Map<string, number>();
  const count = (node: Json): void => {
    if (!node || typeof node !== "object") return;
    const shareable = isKubeObject(node) || isObjectMap(node);
    const json = shareable ? JSON.stringify(node) : "";
    if (shareable && uses.has(json)) {
      uses.set(json, uses.get(json)! + 1);
      return;
    }
    if (shareable) uses.set(json, 1);
    for (const child of Object.values(node)) count(child);
  };
  count(canonical);
  const doc = new Document(null, { version: "1.1" });
  const anchors = new Map<string, YAMLMap | YAMLSeq>();
  const taken = new Set<string>();
  const build = (node: Json): unknown => {
    if (!node || typeof node !== "object") return doc.createNode(node);
    const json = JSON.stringify(node);
    const anchored = anchors.get(json);
    if (anchored) return doc.createAlias(anchored, anchored.anchor);
    const built = Array.isArray(node) ? new YAMLSeq() : new YAMLMap();
    if (Array.isArray(node)) node.forEach((item) => (built as YAMLSeq).add(build(item)));
    else for (const [k, v] of Object.entries(node)) (built as YAMLMap).add(doc.createPair(k, build(v)));
    if ((uses.get(json) ?? 0) > 1) {
      built.anchor = anchorName(node, taken);
      anchors.set(json, built);
    }
    return built;
  };
  doc.contents = build(canonical) as YAMLMap;
  return doc.toString({ lineWidth: 0 });
}

/** A map of Kubernetes objects by name, as Metacontroller sends children and related objects. */
const isObjectMap = (node: Json): boolean =>
  !!node &&
  typeof node === "object" &&
  !Array.isArray(node) &&
  Object.keys(node).length > 0 &&
  Object.values(node).every(isKubeObject);

/** The object's name, or for a map of objects their kind ("BlockDeviceClaims"). */
function anchorName(node: Json, taken: Set<string>): string {
  const base = (
    isKubeObject(node)
      ? node.metadata.name
      : `${(Object.values(node as object)[0] as { kind: string }).kind}s`
  ).replace(/[^A-Za-z0-9._-]/g, "-");
  let name = base;
  for (let i = 2; taken.has(name); i++) name = `${base}-${i}`;
  taken.add(name);
  return name;
}

function main(argv: string[]): void {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      world: { type: "string" },
      document: { type: "string" },
      "new-world": { type: "string" },
      base: { type: "string" },
      whole: { type: "boolean", default: false },
    },
  });
  const dirs = positionals.map((dir) => resolve(dir));
  if (dirs.length === 0) {
    throw new Error(
      "usage: fixture-patch.ts [--world <name> | --new-world <name> [--base <world>] | --whole] [--document <file>] <case-dir>...",
    );
  }
  const documentsOf = (dir: string) =>
    values.document ? [values.document] : INPUTS.filter((file) => documentSource(dir, file));
  if (values.whole) {
    for (const dir of dirs) for (const document of documentsOf(dir)) console.log(makeWhole(dir, document));
    return;
  }
  const newName = values["new-world"];
  if (newName) {
    if (!values.document)
      throw new Error("--new-world needs --document (request.yaml, review.yaml, lookups.yaml or input.yaml)");
    console.log(newWorld(newName, values.document, dirs, values.base));
  }
  for (const dir of dirs) {
    const documents = documentsOf(dir);
    if (documents.length === 0) console.log(`${relative(process.cwd(), dir)}: no input to convert`);
    for (const document of documents) console.log(convert(dir, document, newName ?? values.world));
  }
}

// Run as a script, not when a test imports it.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url))
  main(process.argv.slice(2));
