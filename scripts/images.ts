// npm run images: builds every image of the Dockerfile with buildah, each tagged with the reference the manifests
// use (scripts/image-plan.ts), and says where they are
// (docs/adr/0049-the-images-built-by-buildah-from-the-dockerfile.md). The containers' configuration and storage
// are the project's (scripts/image-env.sh: under $CSTOR_CACHE/containers) unless CONTAINERS_STORAGE_CONF is set.
// Where the Dockerfile's base is neither in storage nor pullable, the local base is made first. An image that
// carries the hash of its inputs as a label is not built again.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { isEntryPoint } from "../runtime/entry.js";
import { readImagePlan, type ImagePlan, type PlannedImage } from "./image-plan.js";

const ROOT = new URL("../", import.meta.url).pathname;
const IMAGE_ENV = join(ROOT, "scripts/image-env.sh");
export const INPUTS_LABEL = "cstor-pool-operator.build-inputs";
/** Dangling layers of earlier builds are pruned once they are this old: recent ones are the next build's cache. */
const PRUNE_AFTER = "1h";
/**
 * A stage other stages copy from (the build stage, npm ci's layer in it) is no image's ancestor, so its layers
 * would be pruned as dangling: tagged here, they stay the next build's cache however long that is.
 */
const CACHE_REPOSITORY = "localhost/cstor-pool-operator-build-cache";

export interface BuiltImage extends PlannedImage {
  id: string;
  sizeBytes: number;
  /** False when the image in storage already had these inputs. */
  built: boolean;
}

export interface BuildOptions {
  root?: string;
  /** Where buildah's output and the progress lines go (stderr by default). */
  output?: NodeJS.WritableStream;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program (an argument array, no shell); output to `sink` when given, else collected. */
function run(argv: readonly string[], env: NodeJS.ProcessEnv, sink?: NodeJS.WritableStream): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { env, stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => (sink ? sink.write(chunk) : out.push(chunk)));
    child.stderr.on("data", (chunk: Buffer) => (sink ? sink.write(chunk) : err.push(chunk)));
    child.once("error", reject);
    child.once("close", (code) =>
      resolve({
        code: code ?? -1,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
      }),
    );
  });
}

async function must(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<string> {
  const result = await run(argv, env);
  if (result.code !== 0)
    throw new Error(
      `${argv.join(" ")} exited ${result.code}: ${result.stderr.trim() || result.stdout.trim()}`,
    );
  return result.stdout;
}

/** The environment buildah and podman run in: the caller's storage if it names one, else the project's. */
export async function containerEnvironment(root = ROOT): Promise<NodeJS.ProcessEnv> {
  if (process.env.CONTAINERS_STORAGE_CONF) return process.env;
  const printed = await must(["bash", join(root, "scripts/image-env.sh"), "--print-env"], process.env);
  const settings = Object.fromEntries(
    printed
      .split("\n")
      .filter((line) => line.includes("="))
      .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
  );
  return { ...process.env, ...settings };
}

async function imageId(reference: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const result = await run(["podman", "image", "inspect", "--format", "{{.Id}}", reference], env);
  return result.code === 0 ? result.stdout.trim() : undefined;
}

/** Each base's image ID: in storage, else pulled, else (no registry answers) the local base made here. */
async function baseIds(
  plan: ImagePlan,
  env: NodeJS.ProcessEnv,
  output: NodeJS.WritableStream,
): Promise<string[]> {
  const ids: string[] = [];
  for (const base of plan.bases) {
    let id = await imageId(base, env);
    if (!id && (await run(["buildah", "pull", "--quiet", base], env)).code === 0)
      id = await imageId(base, env);
    if (!id) {
      output.write(`images: ${base} is not here and cannot be pulled; making the local base\n`);
      await must(["bash", IMAGE_ENV, "--local-base"], env);
      id = await imageId(base, env);
    }
    if (!id)
      throw new Error(
        `the Dockerfile builds FROM ${base}, which no registry here serves, and scripts/image-env.sh --local-base makes another base: make the two agree`,
      );
    ids.push(id);
  }
  return ids;
}

/**
 * A hash of what the build reads: the Dockerfile, .dockerignore, everything under what its COPY instructions take
 * from the context (a file .dockerignore leaves out counts too: a build too many, never one too few), the bases.
 */
export function buildInputs(root: string, plan: ImagePlan, bases: readonly string[]): string {
  const hash = createHash("sha256");
  const add = (path: string): void => {
    const stat = lstatSync(join(root, path));
    hash.update(`${path}\0${stat.mode}\0`);
    if (stat.isSymbolicLink()) hash.update(readlinkSync(join(root, path)));
    else if (stat.isDirectory())
      for (const entry of readdirSync(join(root, path)).sort()) add(`${path}/${entry}`);
    else hash.update(readFileSync(join(root, path)));
  };
  for (const path of ["Dockerfile", ".dockerignore", ...plan.contextSources]) add(path);
  hash.update(JSON.stringify({ bases, images: plan.images }));
  return hash.digest("hex").slice(0, 32);
}

interface Stored {
  id: string;
  sizeBytes: number;
  inputs: string;
}

async function stored(reference: string, env: NodeJS.ProcessEnv): Promise<Stored | undefined> {
  const format = `{{.Id}} {{.Size}} {{index .Labels "${INPUTS_LABEL}"}}`;
  const result = await run(["podman", "image", "inspect", "--format", format, reference], env);
  if (result.code !== 0) return undefined;
  const [id, size, inputs] = result.stdout.trim().split(" ");
  return { id, sizeBytes: Number(size), inputs: inputs ?? "" };
}

interface BuildContext {
  root: string;
  env: NodeJS.ProcessEnv;
  output: NodeJS.WritableStream;
}

/** One stage of the Dockerfile, tagged, with labels; buildah's layer cache makes the stages it shares cheap. */
async function buildStage(
  stage: string,
  tag: string,
  labels: readonly string[],
  { root, env, output }: BuildContext,
): Promise<void> {
  const argv = [
    "buildah",
    "build",
    "--layers",
    "--target",
    stage,
    ...labels.flatMap((label) => ["--label", label]),
    "--tag",
    tag,
    "--file",
    join(root, "Dockerfile"),
    root,
  ];
  const result = await run(argv, env, output);
  if (result.code !== 0)
    throw new Error(
      `buildah build --target ${stage} exited ${result.code} (its output is above or in the build log)`,
    );
}

/** Builds the images whose inputs changed; resolves with every image of the plan as storage now holds it. */
export async function buildImages(options: BuildOptions = {}): Promise<BuiltImage[]> {
  const root = options.root ?? ROOT;
  const plan = readImagePlan(root);
  if (plan.problems.length > 0)
    throw new Error(`the images cannot be built:\n- ${plan.problems.join("\n- ")}`);
  const env = await containerEnvironment(root);
  const output = options.output ?? process.stderr;
  const inputs = buildInputs(root, plan, await baseIds(plan, env, output));
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
  const context = { root, env, output };
  const labels = [`org.opencontainers.image.version=${version}`, `${INPUTS_LABEL}=${inputs}`];
  const images: BuiltImage[] = [];
  for (const image of plan.images) {
    let now = await stored(image.reference, env);
    const built = now?.inputs !== inputs;
    if (built) {
      output.write(`images: building ${image.reference} (Dockerfile stage ${image.stage})\n`);
      await buildStage(image.stage, image.reference, labels, context);
      now = await stored(image.reference, env);
    }
    if (!now) throw new Error(`buildah built ${image.reference} but podman does not find it`);
    images.push({ ...image, id: now.id, sizeBytes: now.sizeBytes, built });
  }
  if (images.some((image) => image.built)) {
    for (const stage of plan.copiedStages)
      await buildStage(stage, `${CACHE_REPOSITORY}:${stage}`, [], context);
    await must(["podman", "image", "prune", "--force", "--filter", `until=${PRUNE_AFTER}`], env);
  }
  return images;
}

/** The table npm run images prints, and where the images are. */
export function describeImages(
  images: readonly BuiltImage[],
  graphRoot: string,
  env: NodeJS.ProcessEnv,
): string {
  const width = Math.max(...images.map((image) => image.reference.length));
  const rows = images.map(
    (image) =>
      `  ${image.reference.padEnd(width)}  ${(image.sizeBytes / 1e6).toFixed(0).padStart(4)} MB  ${image.id.slice(0, 12)}  stage ${image.stage}${image.built ? "" : " (up to date)"}`,
  );
  return [
    `images: ${images.length} from the Dockerfile, in ${graphRoot}`,
    ...rows,
    "podman and buildah see them with:",
    `  export CONTAINERS_CONF=${env.CONTAINERS_CONF ?? ""} CONTAINERS_STORAGE_CONF=${env.CONTAINERS_STORAGE_CONF ?? ""}`,
    "then push them to your registry or load them into kind or k3d as docs/install.md shows.",
    "",
  ].join("\n");
}

async function main(): Promise<void> {
  const started = Date.now();
  const images = await buildImages();
  const env = await containerEnvironment();
  const graphRoot = (await must(["podman", "info", "--format", "{{.Store.GraphRoot}}"], env)).trim();
  process.stdout.write(describeImages(images, graphRoot, env));
  process.stderr.write(`images: done in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
}

if (isEntryPoint(import.meta.url)) {
  main().catch((error: Error) => {
    process.stderr.write(`images: ${error.message}\n`);
    process.exit(1);
  });
}
