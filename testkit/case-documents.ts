// The documents of a golden case (a hook request, an AdmissionReview, the admission lookups). Each is either
// written out whole (<case>/request.yaml) or built from a shared world and a small patch
// (<case>/request.patch.yaml: `world: <name>` names test/fixtures/worlds/<name>.yaml, `patch:` is a merge
// patch, see merge-patch.ts). Shared by the tests and the benchmarks.
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { Document, parse, YAMLMap, YAMLSeq } from "yaml";
import { canonicalize, type Json } from "../lib/canonical.js";
import { applyMergePatch, isKubeObject, type PatchValue } from "./merge-patch.js";

export const FIXTURES = new URL("../test/fixtures/", import.meta.url).pathname;
export const WORLDS = join(FIXTURES, "worlds");
export const PATCH_SUFFIX = ".patch.yaml";

/** A case document stored as a world plus a patch. */
export interface PatchFile {
  world: string;
  patch?: PatchValue;
}

/** `request.yaml` → `request.patch.yaml`. */
export function patchFileName(document: string): string {
  return `${document.replace(/\.yaml$/, "")}${PATCH_SUFFIX}`;
}

/** The file that holds `document` of the case in `dir`, whole or as a patch; undefined if neither exists. */
export function documentSource(dir: string, document: string): string | undefined {
  const whole = join(dir, document);
  const patch = join(dir, patchFileName(document));
  const found = [whole, patch].filter((path) => existsSync(path));
  if (found.length > 1) throw new Error(`${dir}: both ${document} and ${basename(patch)} exist; keep one`);
  return found[0];
}

export function hasCaseDocument(dir: string, document: string): boolean {
  return documentSource(dir, document) !== undefined;
}

/** The document `document` of the case in `dir`: parsed as written, or the world with the patch applied. */
export function readCaseDocument(dir: string, document: string): unknown {
  const source = documentSource(dir, document);
  if (!source) throw new Error(`${dir}: neither ${document} nor ${patchFileName(document)} exists`);
  return source.endsWith(PATCH_SUFFIX) ? buildFromPatch(source, []) : readYaml(source);
}

/**
 * A world: test/fixtures/worlds/<name>.yaml, or <name>.patch.yaml when it is itself another world with a
 * patch (the same cluster with one thing told differently throughout).
 */
export function readWorld(world: string): unknown {
  return structuredClone(worldDocument(world, []));
}

function worldDocument(world: string, via: readonly string[]): unknown {
  if (!WORLD_NAME.test(world)) throw new Error(`"${world}" is not a world name (lower-case letters, digits and dashes)`);
  if (via.includes(world)) throw new Error(`worlds ${[...via, world].join(" → ")} are built from each other in a circle`);
  const source = documentSource(WORLDS, `${world}.yaml`);
  if (!source) throw new Error(`world "${world}" does not exist: write ${join(WORLDS, world)}.yaml`);
  return source.endsWith(PATCH_SUFFIX) ? buildFromPatch(source, [...via, world]) : readYamlOnce(source);
}

const WORLD_NAME = /^[a-z0-9][a-z0-9-]*$/;

/** The worlds a patch file builds on, nearest first. */
export function worldsUnder(patchPath: string): string[] {
  const { world } = readPatchFile(patchPath);
  const source = WORLD_NAME.test(world) ? documentSource(WORLDS, `${world}.yaml`) : undefined;
  return [world, ...(source?.endsWith(PATCH_SUFFIX) ? worldsUnder(source) : [])];
}

export function readPatchFile(path: string): PatchFile {
  const file = readYaml(path) as Partial<PatchFile> | null;
  const extra = Object.keys(file ?? {}).filter((key) => key !== "world" && key !== "patch");
  if (!file || typeof file.world !== "string" || extra.length > 0) {
    throw new Error(`${path}: a patch file holds "world: <name>" and optionally "patch:", nothing else${extra.length ? ` (found ${extra.join(", ")})` : ""}`);
  }
  return file as PatchFile;
}

/** The world with the patch applied, keys sorted as in a whole document. */
function buildFromPatch(path: string, via: readonly string[]): Json {
  const { world, patch } = readPatchFile(path);
  try {
    return canonicalize(applyMergePatch(worldDocument(world, via), patch ?? {}));
  } catch (err) {
    throw new Error(`${path}: ${(err as Error).message}`);
  }
}

export function readYaml(path: string): unknown {
  return parse(readFileSync(path, "utf8"));
}

const parsed = new Map<string, { mtimeMs: number; value: unknown }>();

/** A world file, parsed once per version: many cases read it. Never handed out unless copied. */
function readYamlOnce(path: string): unknown {
  const { mtimeMs } = statSync(path);
  const cached = parsed.get(path);
  if (cached?.mtimeMs === mtimeMs) return cached.value;
  const value = parse(readFileSync(path, "utf8"));
  parsed.set(path, { mtimeMs, value });
  return value;
}

/**
 * A fixture as YAML, keys in the order given (a world comes canonical, a patch with its keys sorted but its
 * new objects in list order), YAML 1.1 quoting like every golden file, nulls kept (in a patch they remove),
 * and an object that appears twice (a claim among both the children and the related objects of a request)
 * written once, with an anchor named after it, and referred to by alias after that.
 */
export function fixtureYaml(value: PatchValue): string {
  const canonical = value as Json;
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
  !!node && typeof node === "object" && !Array.isArray(node) && Object.keys(node).length > 0 && Object.values(node).every(isKubeObject);

/** The object's name, or for a map of objects their kind ("BlockDeviceClaims"). */
function anchorName(node: Json, taken: Set<string>): string {
  const base = (isKubeObject(node) ? node.metadata.name : `${(Object.values(node as object)[0] as { kind: string }).kind}s`).replace(/[^A-Za-z0-9._-]/g, "-");
  let name = base;
  for (let i = 2; taken.has(name); i++) name = `${base}-${i}`;
  taken.add(name);
  return name;
}
