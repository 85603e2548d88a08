// Golden files: test/fixtures/<area>/<case>/ holds the input, the expected output and case.yaml
// ({description, now}). Outputs are compared after canonicalisation (sorted keys, no nulls).
// UPDATE_GOLDEN=1 rewrites expectations; it is refused under CI so a failure can never be "fixed" there.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import { canonicalize, canonicalYaml } from "../../lib/canonical.js";

export const FIXTURES = new URL("../fixtures/", import.meta.url).pathname;

export interface GoldenCase {
  name: string;
  dir: string;
  description: string;
  /** The injected clock of the case. */
  now: Date;
  read(file: string): unknown;
  has(file: string): boolean;
}

export function goldenCases(area: string): GoldenCase[] {
  const root = join(FIXTURES, area);
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const dir = join(root, name);
      const meta = (readYaml(join(dir, "case.yaml")) ?? {}) as { description?: string; now?: string };
      if (!meta.now) throw new Error(`${dir}/case.yaml needs "now" (the clock of the case)`);
      return {
        name,
        dir,
        description: meta.description ?? name,
        now: new Date(meta.now),
        read: (file: string) => readYaml(join(dir, file)),
        has: (file: string) => existsSync(join(dir, file)),
      };
    });
}

export function readYaml(path: string): unknown {
  return parse(readFileSync(path, "utf8"));
}

export function updatingGolden(): boolean {
  if (process.env.UPDATE_GOLDEN !== "1") return false;
  if (process.env.CI) throw new Error("UPDATE_GOLDEN is refused under CI: golden files change only by a reviewed commit");
  return true;
}

/** Compares actual output with <case>/<file>; with UPDATE_GOLDEN=1 (not in CI) writes it instead. */
export function expectGolden(goldenCase: GoldenCase, file: string, actual: unknown): void {
  const path = join(goldenCase.dir, file);
  if (updatingGolden()) {
    writeFileSync(path, canonicalYaml(actual));
    return;
  }
  if (!existsSync(path)) throw new Error(`missing golden file ${path}: run UPDATE_GOLDEN=1 npm test and review it`);
  expect(canonicalize(actual), `${goldenCase.name}/${file}`).to.deep.equal(canonicalize(readYaml(path)));
}
