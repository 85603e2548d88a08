// What is wrong with a fixture tree's layout: a file no case uses (a stray file, a world no case builds on),
// and a case missing what it needs (case.yaml and its clock, an input, an expected output, a file its input
// names). The golden tests only read what they look for, so without this check such files go unnoticed.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { documentSource, FixtureTree, PATCH_SUFFIX, readYaml } from "../../testkit/case-documents.js";
import { FIXED_FIXTURES, GOLDEN_AREAS } from "./golden.js";

const CASE_KEYS = ["description", "now"];

/** Every problem of the tree at `root`, one line each, paths relative to it; empty if none. */
export function fixtureProblems(root: string): string[] {
  const tree = new FixtureTree(root);
  const problems: string[] = [];
  const used = new Set<string>([join(root, "README.md")]);
  const worldsUsed = new Set<string>();
  const rel = (path: string) => relative(root, path) || ".";
  const attempt = (what: string, action: () => void) => {
    try {
      action();
    } catch (err) {
      problems.push(`${what}: ${(err as Error).message.replaceAll(`${root}/`, "")}`);
    }
  };

  for (const [dir, files] of Object.entries(FIXED_FIXTURES)) {
    for (const file of files) {
      const path = join(root, dir, file);
      if (existsSync(path)) used.add(path);
      else problems.push(`${rel(path)}: missing`);
    }
  }

  for (const [area, layout] of Object.entries(GOLDEN_AREAS)) {
    const areaDir = join(root, area);
    if (!existsSync(areaDir)) {
      problems.push(`${area}: missing (no golden cases)`);
      continue;
    }
    for (const name of readdirSync(areaDir).sort()) {
      const dir = join(areaDir, name);
      if (!statSync(dir).isDirectory()) continue;
      const caseFile = join(dir, "case.yaml");
      if (existsSync(caseFile)) {
        used.add(caseFile);
        attempt(rel(caseFile), () => checkCaseFile(caseFile, layout.caseKeys ?? []));
      } else problems.push(`${rel(dir)}: missing case.yaml`);
      for (const document of layout.inputs) {
        attempt(rel(join(dir, document)), () => {
          const source = documentSource(dir, document);
          if (!source)
            throw new Error(`missing (neither ${document} nor ${document.replace(/\.yaml$/, PATCH_SUFFIX)})`);
          used.add(source);
          if (source.endsWith(PATCH_SUFFIX))
            for (const world of tree.worldsUnder(source)) worldsUsed.add(world);
        });
      }
      for (const file of layout.outputs) {
        const path = join(dir, file);
        if (existsSync(path)) used.add(path);
        else problems.push(`${rel(path)}: missing (UPDATE_GOLDEN=1 writes it; review it like code)`);
      }
      if (layout.companions) {
        attempt(rel(dir), () => {
          for (const file of layout.companions!((document) => tree.readCaseDocument(dir, document))) {
            const path = join(dir, file);
            if (existsSync(path)) used.add(path);
            else problems.push(`${rel(path)}: missing, named by the case's input`);
          }
        });
      }
    }
  }

  if (existsSync(tree.worlds)) {
    for (const file of readdirSync(tree.worlds).sort()) {
      const path = join(tree.worlds, file);
      const world = file.endsWith(PATCH_SUFFIX)
        ? file.slice(0, -PATCH_SUFFIX.length)
        : file.replace(/\.yaml$/, "");
      if (!worldsUsed.has(world)) continue;
      used.add(path);
    }
  }

  for (const path of filesUnder(root)) {
    if (used.has(path)) continue;
    const where = rel(path);
    if (path.startsWith(`${tree.worlds}/`)) problems.push(`${where}: a world no case builds on; remove it`);
    else
      problems.push(
        `${where}: no case uses this file; remove it, or name it in test/support/golden.ts if a test reads it`,
      );
  }
  return problems;
}

function checkCaseFile(path: string, extraKeys: readonly string[]): void {
  const meta = readYaml(path) as Record<string, unknown> | null;
  if (!meta || typeof meta !== "object") throw new Error("must be a map with description and now");
  const unknown = Object.keys(meta).filter((key) => !CASE_KEYS.includes(key) && !extraKeys.includes(key));
  if (unknown.length > 0)
    throw new Error(
      `unknown keys ${unknown.join(", ")} (allowed: ${[...CASE_KEYS, ...extraKeys].join(", ")})`,
    );
  if (typeof meta.now !== "string" || Number.isNaN(Date.parse(meta.now)))
    throw new Error(`"now" must be the case's clock, e.g. "2026-11-21T12:00:00Z"`);
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : [path];
  });
}
