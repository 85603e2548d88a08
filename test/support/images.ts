// The shipped manifests as kustomize renders them, the images they name, and the images built once per test run
// with npm run images' own code (scripts/images.ts), its buildah output in a log file kept when the build fails.
import { execFileSync } from "node:child_process";
import { createWriteStream, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { CONFIG_ENV } from "../../lib/hook-config.js";
import { buildImages, type BuiltImage } from "../../scripts/images.js";
import { repoPath } from "../../testkit/kube.js";

/** The objects an overlay renders to (`kubectl kustomize`, as `kubectl apply -k` reads it). */
export function renderOverlay(overlay: string): any[] {
  const text = execFileSync("kubectl", ["kustomize", repoPath(overlay)], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  return parseAllDocuments(text).map((doc) => doc.toJS());
}

export function findObject(objects: readonly any[], kind: string, name: string): any {
  const found = objects.find((o) => o.kind === kind && o.metadata?.name === name);
  if (!found) throw new Error(`no ${kind} ${name} among the rendered objects`);
  return found;
}

/**
 * Every image the objects name: their pod templates' containers and init containers, and the hook server's
 * settings for the images of the pods the hooks make.
 */
export function namedImages(objects: readonly any[]): string[] {
  const settings = new Set<string>([CONFIG_ENV.poolImage, CONFIG_ENV.targetImage]);
  return objects.flatMap((object) => {
    const pod = object.spec?.template?.spec ?? object.spec?.jobTemplate?.spec?.template?.spec;
    const containers = [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])] as {
      image: string;
      env?: { name: string; value?: string }[];
    }[];
    return containers.flatMap((c) => [
      c.image,
      ...(c.env ?? []).filter((e) => settings.has(e.name) && e.value !== undefined).map((e) => e.value!),
    ]);
  });
}

let building: Promise<BuiltImage[]> | undefined;
const BUILD_LOG = join(tmpdir(), `cstor-images-build-${process.pid}.log`);

/** Every image of the Dockerfile, built (or found up to date) once per test run. */
export function builtImages(): Promise<BuiltImage[]> {
  building ??= (async () => {
    const output = createWriteStream(BUILD_LOG);
    try {
      const images = await buildImages({ output });
      rmSync(BUILD_LOG, { force: true });
      return images;
    } catch (error) {
      const tail = readFileSync(BUILD_LOG, "utf8").split("\n").slice(-40).join("\n");
      throw new Error(`${(error as Error).message}\n--- ${BUILD_LOG}, last 40 lines:\n${tail}`, {
        cause: error,
      });
    } finally {
      output.end();
    }
  })();
  return building;
}
