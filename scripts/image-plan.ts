// Which images the project builds and what the manifests call them
// (docs/adr/0049-the-images-built-by-buildah-from-the-dockerfile.md): an image is a Dockerfile stage that no
// other stage builds on, named by its org.opencontainers.image.title label; its reference is the one
// metacontroller/default/kustomization.yaml gives that name, tagged with the package version. Pure functions of
// the files' text, and readImagePlan to read them; npm run images (scripts/images.ts) and test/images/ share them.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";

export const TITLE_LABEL = "org.opencontainers.image.title";
export const KUSTOMIZATION = "metacontroller/default/kustomization.yaml";

export interface DockerfileStage {
  /** Its `AS` name, lower case, or its index when it has none. */
  name: string;
  /** The image or stage it is built FROM. */
  from: string;
  labels: Record<string, string>;
  /** Stages its COPY --from instructions read. */
  copiesFrom: string[];
  /** What its COPY and ADD instructions take from the build context. */
  contextSources: string[];
}

/** One image of the build: its stage, its name, and the reference it is tagged with. */
export interface PlannedImage {
  stage: string;
  name: string;
  reference: string;
}

export interface ImagePlan {
  images: PlannedImage[];
  /** The images the Dockerfile builds FROM that are no stage of it (the public base, here or pulled). */
  bases: string[];
  /** Paths the build takes from the context (relative to it). */
  contextSources: string[];
  /** Stages other stages copy from (the build stage): no image's ancestors, so nothing keeps their layers. */
  copiedStages: string[];
  /** Everything that disagrees, each naming the file, the entry and the fix; the plan is unusable unless empty. */
  problems: string[];
}

/** Instructions with continuation lines joined and comment lines dropped. */
function instructions(text: string): { keyword: string; args: string }[] {
  const out: { keyword: string; args: string }[] = [];
  let pending = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("#") || (line === "" && pending === "")) continue;
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const whole = (pending + line).trim();
    pending = "";
    const match = /^(\S+)\s*(.*)$/.exec(whole);
    if (match) out.push({ keyword: match[1].toUpperCase(), args: match[2] });
  }
  return out;
}

/** `key=value` pairs of a LABEL instruction, values unquoted. */
export function labelPairs(args: string): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (const match of args.matchAll(/([^\s=]+)=("(?:[^"\\]|\\.)*"|\S+)/g)) {
    const value = match[2];
    pairs[match[1]] = value.startsWith('"') ? (JSON.parse(value) as string) : value;
  }
  return pairs;
}

/** A COPY or ADD's arguments: its flags, and the words before the destination. */
function copyArguments(args: string): { from?: string; sources: string[] } {
  const words = args.trim().startsWith("[") ? (JSON.parse(args) as string[]) : args.trim().split(/\s+/);
  const flags = words.filter((word) => word.startsWith("--"));
  const paths = words.filter((word) => !word.startsWith("--"));
  const from = flags.find((flag) => flag.startsWith("--from="))?.slice("--from=".length);
  return { ...(from !== undefined ? { from: from.toLowerCase() } : {}), sources: paths.slice(0, -1) };
}

export function dockerfileStages(text: string): DockerfileStage[] {
  const stages: DockerfileStage[] = [];
  for (const { keyword, args } of instructions(text)) {
    if (keyword === "FROM") {
      const words = args.split(/\s+/).filter((word) => !word.startsWith("--"));
      const alias = words.length >= 3 && words[1].toUpperCase() === "AS" ? words[2].toLowerCase() : undefined;
      stages.push({
        name: alias ?? String(stages.length),
        from: words[0],
        labels: {},
        copiesFrom: [],
        contextSources: [],
      });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) continue;
    if (keyword === "LABEL") Object.assign(stage.labels, labelPairs(args));
    if (keyword === "COPY" || keyword === "ADD") {
      const { from, sources } = copyArguments(args);
      if (from === undefined) stage.contextSources.push(...sources);
      else stage.copiesFrom.push(/^\d+$/.test(from) ? (stages[Number(from)]?.name ?? from) : from);
    }
  }
  return stages;
}

/** Stages no other stage builds on (FROM) or copies from: the images. */
export function leafStages(stages: readonly DockerfileStage[]): DockerfileStage[] {
  const used = new Set(stages.flatMap((stage) => [stage.from.toLowerCase(), ...stage.copiesFrom]));
  return stages.filter((stage) => !used.has(stage.name));
}

export interface KustomizeImage {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}

export function kustomizeImages(text: string): KustomizeImage[] {
  const document = parse(text) as { images?: KustomizeImage[] } | null;
  return document?.images ?? [];
}

/** The plan from the three files' text: the Dockerfile, the kustomization, and the package version. */
export function imagePlan(dockerfile: string, kustomization: string, version: string): ImagePlan {
  const stages = dockerfileStages(dockerfile);
  const stageNames = new Set(stages.map((stage) => stage.name));
  const entries = kustomizeImages(kustomization);
  const problems: string[] = [];
  const images: PlannedImage[] = [];
  for (const stage of leafStages(stages)) {
    const name = stage.labels[TITLE_LABEL];
    if (!name) {
      problems.push(
        `Dockerfile stage "${stage.name}" is an image (no other stage builds on it) but has no LABEL ${TITLE_LABEL}: give it the image's name, e.g. LABEL ${TITLE_LABEL}="cstor-${stage.name}", and list that name in ${KUSTOMIZATION} images:`,
      );
      continue;
    }
    const entry = entries.find((e) => e.name === name);
    const problem = entryProblem(name, stage.name, entry, version);
    if (problem) problems.push(problem);
    else images.push({ stage: stage.name, name, reference: `${entry!.newName}:${version}` });
  }
  for (const entry of entries) {
    if (!leafStages(stages).some((stage) => stage.labels[TITLE_LABEL] === entry.name))
      problems.push(
        `${KUSTOMIZATION} images: names ${entry.name}, which no Dockerfile stage builds: give the stage that builds it LABEL ${TITLE_LABEL}="${entry.name}", or remove the entry`,
      );
  }
  return {
    images,
    bases: [
      ...new Set(stages.map((stage) => stage.from).filter((from) => !stageNames.has(from.toLowerCase()))),
    ],
    contextSources: [...new Set(stages.flatMap((stage) => stage.contextSources))].sort(),
    copiedStages: [...new Set(stages.flatMap((stage) => stage.copiesFrom))].sort(),
    problems,
  };
}

function entryProblem(
  name: string,
  stage: string,
  entry: KustomizeImage | undefined,
  version: string,
): string | undefined {
  const wanted = `{name: ${name}, newName: <registry>/${name}, newTag: ${version}}`;
  if (!entry)
    return `image ${name} (Dockerfile stage "${stage}") has no entry in ${KUSTOMIZATION} images: add ${wanted}`;
  if (!entry.newName?.endsWith(`/${name}`))
    return `${KUSTOMIZATION} images: ${name} has newName ${entry.newName ?? "(none)"}, which does not end in /${name}: set newName to <registry>/${name}`;
  if (entry.digest !== undefined || entry.newTag !== version)
    return `${KUSTOMIZATION} images: ${name} has ${entry.digest !== undefined ? `digest ${entry.digest}` : `newTag ${entry.newTag ?? "(none)"}`}, but npm run images tags the images with the package version: set newTag: ${version}`;
  return undefined;
}

/** The plan of the repository at `root`. */
export function readImagePlan(root: string): ImagePlan {
  const read = (path: string) => readFileSync(join(root, path), "utf8");
  const { version } = JSON.parse(read("package.json")) as { version: string };
  return imagePlan(read("Dockerfile"), read(KUSTOMIZATION), version);
}

/** Those of `references` (sorted, once each) that are no image of the plan. */
/**
 * The registry path of the images the install names but the project does not build: the Kubernetes project's CSI
 * sidecars (provisioner, attacher, resizer, node-driver-registrar, livenessprobe), each pinned to a release.
 */
export const UPSTREAM_IMAGES = "registry.k8s.io/sig-storage/";

/** The references the project builds, and the upstream ones, each of those pinned to a release tag. */
export function partitionReferences(references: readonly string[]): {
  ours: string[];
  upstream: string[];
  unpinned: string[];
} {
  const upstream = [...new Set(references.filter((r) => r.startsWith(UPSTREAM_IMAGES)))].sort();
  return {
    ours: references.filter((r) => !r.startsWith(UPSTREAM_IMAGES)),
    upstream,
    unpinned: upstream.filter((r) => !/:v\d+\.\d+\.\d+$/.test(r)),
  };
}

export function unbuiltReferences(references: readonly string[], images: readonly PlannedImage[]): string[] {
  const built = new Set(images.map((image) => image.reference));
  return [...new Set(references.filter((reference) => !built.has(reference)))].sort();
}
