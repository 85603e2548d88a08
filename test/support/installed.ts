// The CLI as users get it: the checkout built once per test run, packed with `npm pack`, and the tarball
// installed with `npm install -g --prefix` into a temporary directory whose path holds a space. npm links the
// bins there (prefix/bin/cstor-pool → ../lib/node_modules/…/dist/cli/cstor-pool.js), so every test that runs
// them runs the code through a symlink, as npx, `npm install -g` and node_modules/.bin do.
import { execFile, type ExecFileOptions } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onStop } from "../../testkit/processes.js";

export const REPO = new URL("../../", import.meta.url).pathname;

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program (no shell) and resolves with its exit code and output, whatever the code. */
export function runProgram(
  file: string,
  args: readonly string[],
  options: ExecFileOptions & { input?: string } = {},
): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(
      file,
      args,
      { maxBuffer: 64 * 1024 * 1024, ...options, encoding: "utf8" },
      (error, stdout, stderr) => {
        const code = error
          ? typeof (error as { code?: unknown }).code === "number"
            ? (error as { code: number }).code
            : -1
          : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

async function must(file: string, args: readonly string[], options: ExecFileOptions = {}): Promise<string> {
  const result = await runProgram(file, args, options);
  if (result.code !== 0)
    throw new Error(`${file} ${args.join(" ")} exited ${result.code}: ${result.stderr || result.stdout}`);
  return result.stdout;
}

export interface Installed {
  /** The temporary directory; its name holds a space. */
  root: string;
  /** prefix/bin, where npm linked the bins. */
  bin: string;
  /** The tarball `npm pack` made. */
  tarball: string;
  /** The files the tarball holds, without the leading "package/". */
  files: string[];
}

let installing: Promise<Installed> | undefined;

/** Built, packed and installed once per test run; removed when the run ends. */
export function installedPackage(): Promise<Installed> {
  installing ??= install();
  return installing;
}

/** npm's own cache, so installing reuses what `npm ci` fetched; everything else stays in the temporary root. */
const npmEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  npm_config_update_notifier: "false",
  npm_config_fund: "false",
  npm_config_audit: "false",
});

async function install(): Promise<Installed> {
  const root = mkdtempSync(join(tmpdir(), "cstor pool installed "));
  onStop(async () => rmSync(root, { recursive: true, force: true }));
  // Incremental (tsconfig.build.json): after `npm ci` (prepare) this only checks that dist is current.
  await must("npm", ["run", "build"], { cwd: REPO, env: npmEnv() });
  const packed = JSON.parse(
    await must("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", root], {
      cwd: REPO,
      env: npmEnv(),
    }),
  ) as {
    filename: string;
    files: { path: string }[];
  }[];
  const tarball = join(root, packed[0].filename);
  const prefix = join(root, "prefix");
  await must("npm", ["install", "--global", "--prefix", prefix, "--prefer-offline", "--omit=dev", tarball], {
    cwd: root,
    env: npmEnv(),
  });
  return { root, bin: join(prefix, "bin"), tarball, files: packed[0].files.map((f) => f.path) };
}

/** The installed bins, by name. */
export function installedBins(installed: Installed): string[] {
  return readdirSync(installed.bin).sort();
}
