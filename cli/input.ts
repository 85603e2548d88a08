// What the subcommands read and where they write: files, directories (their .yaml, .yml and .json files, as
// `kubectl apply -f <dir>` reads them, not recursively) and "-" for standard input. Behind an interface so
// tests hold files in memory.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import type { KubeObject } from "../api/types.js";
import { InputError } from "./args.js";

export interface CliIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** "-" is standard input. */
  readFile(path: string): string;
  /** The names in a directory, or undefined when the path is not one. */
  listDirectory?(path: string): string[] | undefined;
}

export const processIO: CliIO = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  readFile: (path) => readFileSync(path === "-" ? 0 : path, "utf8"),
  listDirectory: (path) =>
    path !== "-" && statSync(path, { throwIfNoEntry: false })?.isDirectory() ? readdirSync(path) : undefined,
};

const MANIFEST = /\.(ya?ml|json)$/;

/** Every object of the given files and directories, in order: multi-document YAML or JSON, `kind: List` flattened. */
export function readAll(io: CliIO, paths: readonly string[]): KubeObject[] {
  return paths.flatMap((path) => {
    const entries = io.listDirectory?.(path);
    if (!entries) return readObjects(io, path);
    const manifests = entries.filter((name) => MANIFEST.test(name)).sort();
    if (manifests.length === 0)
      throw new InputError(`${path} is a directory without .yaml, .yml or .json files`);
    return manifests.flatMap((name) => readObjects(io, join(path, name)));
  });
}

/** Every object of one file. YAML 1.1, as kubectl reads it (a bare off is false). */
export function readObjects(io: CliIO, path: string): KubeObject[] {
  let text: string;
  try {
    text = io.readFile(path);
  } catch (err) {
    throw new InputError(`cannot read ${path}: ${(err as Error).message}`);
  }
  const out: KubeObject[] = [];
  for (const doc of parseAllDocuments(text, { version: "1.1" })) {
    if (doc.errors.length > 0) throw new InputError(`${path} is not valid YAML: ${doc.errors[0].message}`);
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) continue;
    const items =
      (value as { kind?: string; items?: unknown[] }).kind === "List"
        ? ((value as { items?: unknown[] }).items ?? [])
        : [value];
    for (const item of items) {
      if (!item || typeof item !== "object" || typeof (item as KubeObject).kind !== "string") {
        throw new InputError(`${path} holds something that is not a Kubernetes object (no kind)`);
      }
      out.push(item as KubeObject);
    }
  }
  return out;
}
