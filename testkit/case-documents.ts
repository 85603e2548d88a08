// The documents of a golden case (a hook request, an AdmissionReview, the admission lookups). Each is either
// written out whole (<case>/request.yaml) or built from a shared world and a small patch
// (<case>/request.patch.yaml: `world: <name>` names test/fixtures/worlds/<name>.yaml, `patch:` is a merge
// patch, see merge-patch.ts). Shared by the tests and the benchmarks.
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { parse } from "yaml";
import { canonicalize, type Json } from "../lib/canonical.js";
import { applyMergePatch, type PatchValue } from "./merge-patch.js";

export const FIXTURES = new URL("../test/fixtures/", import.meta.url).pathname;
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

const WORLD_NAME = /^[a-z0-9][a-z0-9-]*$/;

/** A fixture tree: case directories anywhere under it, their worlds in <root>/worlds. */
export class FixtureTree {
  readonly worlds: string;

  constructor(readonly root: string) {
    this.worlds = join(root, "worlds");
  }

  /** The document `document` of the case in `dir`: parsed as written, or the world with the patch applied. */
  readCaseDocument(dir: string, document: string): unknown {
    const source = documentSource(dir, document);
    if (!source) throw new Error(`${dir}: neither ${document} nor ${patchFileName(document)} exists`);
    return source.endsWith(PATCH_SUFFIX) ? this.buildFromPatch(source, []) : readYaml(source);
  }

  /**
   * A world: worlds/<name>.yaml, or worlds/<name>.patch.yaml when it is itself another world with a patch
   * (the same cluster with one thing told differently throughout).
   */
  readWorld(world: string): unknown {
    return structuredClone(this.worldDocument(world, []));
  }

  /** The worlds a patch file builds on, nearest first. */
  worldsUnder(patchPath: string): string[] {
    const { world } = readPatchFile(patchPath);
    const source = this.worldSource(world);
    return [world, ...(source.endsWith(PATCH_SUFFIX) ? this.worldsUnder(source) : [])];
  }

  private worldSource(world: string): string {
    if (!WORLD_NAME.test(world))
      throw new Error(`"${world}" is not a world name (lower-case letters, digits and dashes)`);
    const source = documentSource(this.worlds, `${world}.yaml`);
    if (!source) throw new Error(`world "${world}" does not exist: write ${join(this.worlds, world)}.yaml`);
    return source;
  }

  private worldDocument(world: string, via: readonly string[]): unknown {
    if (via.includes(world))
      throw new Error(`worlds ${[...via, world].join(" → ")} are built from each other in a circle`);
    const source = this.worldSource(world);
    return source.endsWith(PATCH_SUFFIX)
      ? this.buildFromPatch(source, [...via, world])
      : readYamlOnce(source);
  }

  /** The world with the patch applied, keys sorted as in a whole document. */
  private buildFromPatch(path: string, via: readonly string[]): Json {
    const { world, patch } = readPatchFile(path);
    try {
      return canonicalize(applyMergePatch(this.worldDocument(world, via), patch ?? {}));
    } catch (err) {
      throw new Error(`${path}: ${(err as Error).message}`, { cause: err });
    }
  }
}

/** The project's fixtures, test/fixtures. */
export const fixtures = new FixtureTree(FIXTURES);
export const WORLDS = fixtures.worlds;
export const hasCaseDocument = (dir: string, document: string): boolean =>
  documentSource(dir, document) !== undefined;
export const readCaseDocument = (dir: string, document: string): unknown =>
  fixtures.readCaseDocument(dir, document);
export const readWorld = (world: string): unknown => fixtures.readWorld(world);

export function readPatchFile(path: string): PatchFile {
  const file = readYaml(path) as Partial<PatchFile> | null;
  const extra = Object.keys(file ?? {}).filter((key) => key !== "world" && key !== "patch");
  if (!file || typeof file.world !== "string" || extra.length > 0) {
    throw new Error(
      `${path}: a patch file holds "world: <name>" and optionally "patch:", nothing else${extra.length ? ` (found ${extra.join(", ")})` : ""}`,
    );
  }
  return file as PatchFile;
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
  const value: unknown = parse(readFileSync(path, "utf8"));
  parsed.set(path, { mtimeMs, value });
  return value;
}
