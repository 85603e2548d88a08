// Whether a module is the program node was started with. `import.meta.url` is the module's real path as a
// file URL, while process.argv[1] is the path as typed or linked: a symlink under npx, `npm install -g` and
// node_modules/.bin, and a plain path where the URL escapes spaces. Both are resolved before comparing.
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";

export function isEntryPoint(moduleUrl: string, started: string | undefined = process.argv[1]): boolean {
  if (!started) return false;
  try {
    return realpathSync(fileURLToPath(moduleUrl)) === realpathSync(started);
  } catch {
    return false;
  }
}
