// A captured piece of sysfs or configfs (test/fixtures/kernel/*.yaml: path -> contents, { link }, { dir }) laid
// out as real files, directories and symlinks under a temporary root, so the adapters' readers run unchanged
// against what a kernel showed.
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parse } from "yaml";
import { REPO_ROOT } from "../../testkit/kube.js";

type Entry = string | { link: string } | { dir: true };

/** The fixture `name` (under test/fixtures/kernel/) under a new temporary directory; resolves with that root. */
export function kernelTree(...names: string[]): string {
  const root = mkdtempSync(join(tmpdir(), "cstor-kernel-tree-"));
  for (const name of names) {
    const entries = parse(readFileSync(join(REPO_ROOT, "test/fixtures/kernel", name), "utf8")) as Record<
      string,
      Entry
    >;
    for (const [path, entry] of Object.entries(entries)) {
      const full = join(root, path);
      if (typeof entry === "object" && "dir" in entry) {
        mkdirSync(full, { recursive: true });
        continue;
      }
      mkdirSync(dirname(full), { recursive: true });
      if (typeof entry === "string") writeFileSync(full, entry);
      else symlinkSync(entry.link, full);
    }
  }
  return root;
}
