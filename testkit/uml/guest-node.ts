// Repository TypeScript run by node inside a UML guest (docs/data-path-tests.md, "Code in the guest"). tsx is
// far too slow there: its loader thread and esbuild's service took 26-39 s per start in the guest at load 8,
// plain node 5-7 s (and about 1 s on an idle host). So the host transpiles the entry file and every file it
// imports relatively, one file at a time (no type check: tsc checks the repository), into a directory of
// plain ES modules that the guest's node runs. Only node: built-ins may be imported by name: the guest
// resolves nothing from node_modules for these files.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { REPO_ROOT } from "../kube.js";

/**
 * Transpiles `entry` (repository-relative, .ts) and its relative imports into `outDir`, keeping their paths
 * under the repository; resolves with the entry's .js path to give `node`.
 */
export function compileForGuest(entry: string, outDir: string): string {
  const done = new Set<string>();
  const pending = [resolve(REPO_ROOT, entry)];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (done.has(file)) continue;
    done.add(file);
    const source = readFileSync(file, "utf8");
    for (const { fileName } of ts.preProcessFile(source, true, true).importedFiles) {
      if (fileName.startsWith(".")) pending.push(resolve(dirname(file), fileName.replace(/\.js$/, ".ts")));
      else if (!fileName.startsWith("node:"))
        throw new Error(
          `${relative(REPO_ROOT, file)} imports ${fileName}: guest code may import node: modules only`,
        );
    }
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: false,
      },
      fileName: file,
    });
    const out = join(outDir, relative(REPO_ROOT, file).replace(/\.ts$/, ".js"));
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, outputText);
  }
  writeFileSync(join(outDir, "package.json"), '{ "type": "module" }\n');
  return join(outDir, entry.replace(/\.ts$/, ".js"));
}
