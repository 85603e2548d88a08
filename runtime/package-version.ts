// The version of the package a program was installed with: its package.json, one level up from runtime/ in a
// checkout, two from dist/runtime/ in a package.
import { readFileSync } from "node:fs";

export function packageVersion(): string {
  for (const relative of ["../../package.json", "../package.json"]) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(relative, import.meta.url), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (manifest.name === "cstor-pool-operator" && manifest.version) return manifest.version;
    } catch {
      // not at this level
    }
  }
  return "unknown";
}
