// csi-sanity (kubernetes-csi/csi-test v5.6.0, built once by scripts/csi-env.sh) run against a driver's sockets, its
// results read from Ginkgo's JUnit report: every spec's name, status and the message of a skip or failure.
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { REPO_ROOT } from "./kube.js";

export interface SanitySpec {
  name: string;
  /** Ginkgo's: passed, failed, skipped, pending, panicked. */
  status: string;
  message: string;
}

export interface SanityRun {
  specs: SanitySpec[];
  code: number;
  /** csi-sanity's output, for a failure's message. */
  output: string;
}

export interface SanityOptions {
  /** The node (or whole) endpoint, and the controller's when it is another socket. */
  endpoint: string;
  controllerEndpoint?: string;
  /** Where the parameters file, the report and csi-sanity's mount and staging directories go. */
  dir: string;
  /** CreateVolume's parameters, as a StorageClass's. */
  parameters: Record<string, string>;
  volumeBytes: number;
  expandBytes: number;
  /** Ginkgo's --ginkgo.skip regular expression, when some specs are not this run's. */
  skip?: string;
  /** Ginkgo's --ginkgo.focus regular expression: only these specs run. */
  focus?: string;
  /** csi-sanity's --csi.secrets: each RPC's secrets (NodeStageVolumeSecret, ...). */
  secrets?: Record<string, Record<string, string>>;
  /** Where csi-sanity makes its mount and staging directories (default: `dir`). */
  mountRoot?: string;
  /** Runs csi-sanity's argv where the node is (default: this host); resolves with its exit code and output. */
  launch?: (argv: readonly string[]) => Promise<{ code: number; output: string }>;
}

/** The sanity binary scripts/csi-env.sh built (once, into the cache). */
export async function csiSanityBinary(): Promise<string> {
  const tools = await run("bash", [join(REPO_ROOT, "scripts/csi-env.sh"), "--print-env"], 40 * 60_000);
  const sanity = /^CSI_SANITY=(.*)$/m.exec(tools.stdout)?.[1];
  if (!sanity) throw new Error(`scripts/csi-env.sh named no csi-sanity: ${tools.stderr}`);
  return sanity;
}

const run = (file: string, args: string[], timeoutMs: number) =>
  new Promise<{ stdout: string; stderr: string; code: number }>((resolve) =>
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ stdout, stderr, code: error ? Number((error as { code?: number }).code ?? 1) : 0 }),
    ),
  );

export async function runCsiSanity(options: SanityOptions): Promise<SanityRun> {
  const sanity = await csiSanityBinary();
  const file = (name: string, content: object) => {
    const path = join(options.dir, name);
    writeFileSync(path, stringify(content));
    return path;
  };
  const report = join(options.dir, "sanity.xml");
  const mountRoot = options.mountRoot ?? options.dir;
  const argv = [
    sanity,
    `--csi.endpoint=${options.endpoint}`,
    ...(options.controllerEndpoint ? [`--csi.controllerendpoint=${options.controllerEndpoint}`] : []),
    `--csi.testvolumeparameters=${file("parameters.yaml", options.parameters)}`,
    ...(options.secrets ? [`--csi.secrets=${file("secrets.yaml", options.secrets)}`] : []),
    `--csi.testvolumesize=${options.volumeBytes}`,
    `--csi.testvolumeexpandsize=${options.expandBytes}`,
    `--csi.mountdir=${join(mountRoot, "mount")}`,
    `--csi.stagingdir=${join(mountRoot, "staging")}`,
    ...(options.skip ? [`--ginkgo.skip=${options.skip}`] : []),
    ...(options.focus ? [`--ginkgo.focus=${options.focus}`] : []),
    `--ginkgo.junit-report=${report}`,
  ];
  const launch =
    options.launch ??
    (async (args: readonly string[]) => {
      const result = await run(args[0], args.slice(1), 30 * 60_000);
      return { code: result.code, output: result.stdout + result.stderr };
    });
  const result = await launch(argv);
  return { specs: junitSpecs(readFileSync(report, "utf8")), code: result.code, output: result.output };
}

export interface SanityVerdict {
  summary: { passed: number; failed: number; skipped: number; pending: number };
  /** Specs that neither passed, nor were skipped or pending. */
  failed: SanitySpec[];
  /** Skipped specs `explained` does not account for, as "name: message". */
  unexplained: string[];
}

/** A run's counts, its failures, and the skips no reason accounts for. "pending": specs csi-sanity disabled itself. */
export function judgeSanityRun(run: SanityRun, explained: (spec: SanitySpec) => boolean): SanityVerdict {
  const count = (status: string) => run.specs.filter((s) => s.status === status);
  const failed = run.specs.filter((s) => !["passed", "skipped", "pending"].includes(s.status));
  return {
    summary: {
      passed: count("passed").length,
      failed: failed.length,
      skipped: count("skipped").length,
      pending: count("pending").length,
    },
    failed,
    unexplained: count("skipped")
      .filter((s) => !explained(s))
      .map((s) => `${s.name}: ${s.message}`),
  };
}

/** Ginkgo's JUnit report: one testcase per spec, its status, and a skip's or failure's message. */
function junitSpecs(xml: string): SanitySpec[] {
  const specs: SanitySpec[] = [];
  for (const match of xml.matchAll(
    /<testcase name="([^"]*)"[^>]*status="([a-z]+)"[^>]*>([\s\S]*?)<\/testcase>/g,
  )) {
    const message = /<(?:skipped|failure) message="([^"]*)"/.exec(match[3])?.[1] ?? "";
    specs.push({ name: unescapeXml(match[1]), status: match[2], message: unescapeXml(message) });
  }
  return specs;
}

function unescapeXml(text: string): string {
  const entities: Record<string, string> = { quot: '"', "#39": "'", lt: "<", gt: ">", amp: "&" };
  return text.replace(/&(quot|#39|lt|gt|amp);/g, (_, name: string) => entities[name]);
}
