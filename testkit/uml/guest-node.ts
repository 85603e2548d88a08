// Repository TypeScript run by node inside a UML guest (docs/data-path-tests.md, "Code in the guest"). tsx is
// far too slow there: its loader thread and esbuild's service took 26-39 s per start in the guest at load 8,
// plain node 5-7 s (and about 1 s on an idle host). So the host transpiles the entry file and every file it
// imports relatively, one file at a time (no type check: tsc checks the repository), into a directory of
// plain ES modules that the guest's node runs. Packages (node_modules) may be imported by name only when the
// output directory is inside the repository, where node finds them as the image's node finds them in /app.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { REPO_ROOT } from "../kube.js";
import type { UmlGuest } from "./guest.js";

/**
 * Transpiles `entry` (repository-relative, .ts) and its relative imports into `outDir`, keeping their paths
 * under the repository; resolves with the entry's .js path to give `node`.
 */
export function compileForGuest(entry: string, outDir: string): string {
  const insideRepository = !relative(REPO_ROOT, resolve(outDir)).startsWith("..");
  const done = new Set<string>();
  const pending = [resolve(REPO_ROOT, entry)];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (done.has(file)) continue;
    done.add(file);
    const source = readFileSync(file, "utf8");
    for (const { fileName } of ts.preProcessFile(source, true, true).importedFiles) {
      if (fileName.startsWith(".")) pending.push(resolve(dirname(file), fileName.replace(/\.js$/, ".ts")));
      else if (!fileName.startsWith("node:") && !insideRepository)
        throw new Error(
          `${relative(REPO_ROOT, file)} imports ${fileName}: compile it into a directory inside the repository (guestBuildDir) to import packages`,
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

/** A directory inside the repository (ignored by git) for code that imports packages; removed by the caller. */
export function guestBuildDir(label: string): string {
  const dir = join(REPO_ROOT, ".cache", "uml-guest", `${label}-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Runs a guest driver (testkit/uml/guest-driver.ts) once: `node <driver> <steps> <config.json>` in the guest, the
 * config written into `dir` first. Resolves with the JSON object the driver printed last; appends the run's
 * and the driver's own step times to `timings`. UML_DRIVER_OUTPUT=1 prints the JSON.
 */
export async function driveGuest(
  run: { guest: Pick<UmlGuest, "exec">; driver: string; dir: string; timings: string[] },
  steps: string,
  config: unknown,
  timeoutMs = 240_000,
): Promise<any> {
  const file = join(run.dir, `config-${steps.replace(/,/g, "-")}.json`);
  writeFileSync(file, JSON.stringify(config));
  const started = Date.now();
  const result = await run.guest.exec(`node ${run.driver} ${steps} ${file}`, { timeoutMs });
  run.timings.push(`guest: node driver ${steps}: ${((Date.now() - started) / 1000).toFixed(2)} s`);
  if (result.code !== 0)
    throw new Error(`driver ${steps}: exit ${result.code}\n${result.stdout}${result.stderr}`);
  const output = JSON.parse(result.stdout.trim().split("\n").pop()!);
  if (process.env.UML_DRIVER_OUTPUT) console.log(JSON.stringify(output, null, 1));
  for (const [what, ms] of Object.entries(output.timings as Record<string, number>))
    run.timings.push(`  in the guest, ${what}: ${(ms / 1000).toFixed(2)} s`);
  return output;
}

/** Host-side step timings of a guest test file (printed with UML_TIMINGS=1), shared with driveGuest. */
export function stepTimer(): {
  timings: string[];
  timed: <T>(what: string, step: () => Promise<T>) => Promise<T>;
} {
  const timings: string[] = [];
  const timed = async <T>(what: string, step: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    const result = await step();
    timings.push(`${what}: ${((Date.now() - started) / 1000).toFixed(2)} s`);
    return result;
  };
  return { timings, timed };
}
