// Every repository path the docs and the code's comments name exists in the working tree, so a moved or
// deleted file cannot leave a reference behind. Scanned: README.md and docs/**/*.md (whole text, code blocks
// included), and the comments of every tracked .ts, .js, .cjs and .sh file.
//
// What counts as a path reference (pathReferences below):
// - a token that starts with a top-level directory of the repository and a slash (`lib/cspc/sync.ts`,
//   `hooks/http/`, `docs/volumes.md`), not preceded by a letter, digit, `.`, `/` or `-`, so URLs
//   (`https://github.com/…/docs/x`) and absolute paths (`/var/lib/zfs`) are not references;
// - in Markdown, the target of a relative link (`[text](adr/README.md)`), resolved from the file's folder;
//   links with a scheme (`https:`) and in-page anchors (`#…`) are not.
// A reference ends before `#` (an anchor) and `:` (a line, `lib/cspc/sync.ts:12`); trailing punctuation is not part
// of it. One with a placeholder (`<name>`, `NNNN`, `…`, `$VAR`) is skipped; `{a,b}` is expanded; one with
// `*` is a glob that must match a tracked file or folder; a `.js` path is also satisfied by its `.ts` source
// (the import spelling of a TypeScript module). A path .gitignore covers names where something is written
// (`bench/results/profiles/`), not a file of the repository, and is not checked.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { expect } from "chai";
import ts from "typescript";

const ROOT = join(import.meta.dirname, "..", "..");

export interface PathReference {
  line: number;
  path: string;
}

const tracked = (): string[] =>
  execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" }).split("\0").filter(Boolean);

/** Those of `paths` that .gitignore covers. */
function gitIgnored(paths: readonly string[]): string[] {
  if (paths.length === 0) return [];
  const run = spawnSync("git", ["check-ignore", "--no-index", "--stdin"], { cwd: ROOT, input: paths.join("\n"), encoding: "utf8" });
  return run.stdout.split("\n").filter(Boolean);
}

/** The repository's top-level directories: the first segment of every tracked path that has a second. */
export function topLevelDirectories(files: readonly string[]): string[] {
  return [...new Set(files.filter((f) => f.includes("/")).map((f) => f.slice(0, f.indexOf("/"))))].sort();
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const PLACEHOLDER = /[<>$]|NNNN|\.\.\.|…/;
const TRAILING = /[.,;:)'"`\]]+$/;

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/**
 * The path references in `text` (a Markdown file's text when `markdown` is set, else comment text), with
 * `from` the repository-relative folder relative links resolve from. Paths are repository-relative.
 */
export function pathReferences(text: string, dirs: readonly string[], markdown = false, from = ""): PathReference[] {
  const out: PathReference[] = [];
  const token = new RegExp(`(?<![\\w./-])(?:${dirs.map(escape).join("|")})/[\\w./*<>{},…$@+-]*`, "g");
  for (const m of text.matchAll(token)) {
    const path = m[0].replace(TRAILING, "");
    if (path.includes("{") !== path.includes("}")) continue; // a brace split by the token's end: not a path
    out.push({ line: lineOf(text, m.index), path: path.replace(/,+$/, "") });
  }
  if (markdown) {
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1].replace(/^<|>$/g, "").split("#")[0];
      if (!target || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // in-page anchor, or a URL
      const path = normalize(join(from, target));
      if (path.startsWith("..")) continue; // outside the repository
      out.push({ line: lineOf(text, m.index), path });
    }
  }
  return out;
}

/** `{a,b}` expanded (one level, as the docs write it). */
function expand(path: string): string[] {
  const m = /\{([^{}]*)\}/.exec(path);
  if (!m) return [path];
  return m[1].split(",").flatMap((alt) => expand(path.slice(0, m.index) + alt + path.slice(m.index + m[0].length)));
}

function globRegExp(glob: string): RegExp {
  const body = glob
    .replace(/\/$/, "")
    .split(/(\*\*\/|\*|\?)/)
    .map((part) => (part === "**/" ? "(?:.*/)?" : part === "*" ? "[^/]*" : part === "?" ? "[^/]" : escape(part)))
    .join("");
  return new RegExp(`^${body}$`);
}

/** Whether a referenced path (or every path it expands to) exists. */
export function exists(path: string, files: readonly string[], root = ROOT): boolean {
  if (PLACEHOLDER.test(path)) return true;
  return expand(path).every((p) => {
    if (p.includes("*") || p.includes("?")) {
      const re = globRegExp(p);
      const candidates = new Set(files.flatMap((f) => f.split("/").map((_, i, parts) => parts.slice(0, i + 1).join("/"))));
      return [...candidates].some((c) => re.test(c));
    }
    if (existsSync(join(root, p))) return true;
    return p.endsWith(".js") && existsSync(join(root, p.replace(/\.js$/, ".ts")));
  });
}

/** The comments of a TypeScript or JavaScript file, each with its line, found by the compiler's scanner. */
export function scriptComments(file: string, text: string): { line: number; text: string }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const seen = new Map<number, string>();
  const collect = (ranges: ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? []) seen.set(r.pos, text.slice(r.pos, r.end));
  };
  const visit = (node: ts.Node) => {
    collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(text, node.getEnd()));
    node.getChildren(source).forEach(visit);
  };
  visit(source);
  return [...seen].sort(([a], [b]) => a - b).map(([pos, comment]) => ({ line: lineOf(text, pos), text: comment }));
}

/** The comments of a shell script: from a `#` at a line's start or after a blank to the line's end. */
export function shellComments(text: string): { line: number; text: string }[] {
  return text.split("\n").flatMap((line, i) => {
    const m = /(?:^|\s)#(?![!{])(.*)$/.exec(line);
    return m && !(i === 0 && line.startsWith("#!")) ? [{ line: i + 1, text: m[1] }] : [];
  });
}

/** Each stale reference as `file:line -> path`. */
export function staleReferences(root = ROOT): string[] {
  const files = tracked();
  const dirs = topLevelDirectories(files);
  const missing: (PathReference & { file: string })[] = [];
  const check = (file: string, refs: PathReference[]) => {
    for (const ref of refs) if (!exists(ref.path, files, root)) missing.push({ file, ...ref });
  };
  for (const file of files) {
    if (!existsSync(join(root, file))) continue; // deleted in the working tree, not yet committed
    const text = () => readFileSync(join(root, file), "utf8");
    if (file === "README.md" || (file.startsWith("docs/") && file.endsWith(".md"))) {
      check(file, pathReferences(text(), dirs, true, dirname(file) === "." ? "" : dirname(file)));
    } else if (/\.(ts|js|cjs)$/.test(file) && !file.startsWith("test/fixtures/")) {
      const comments = scriptComments(file, text());
      check(file, comments.flatMap((c) => pathReferences(c.text, dirs).map((r) => ({ ...r, line: c.line + r.line - 1 }))));
    } else if (file.endsWith(".sh")) {
      check(file, shellComments(text()).flatMap((c) => pathReferences(c.text, dirs).map((r) => ({ ...r, line: c.line }))));
    }
  }
  // A path the repository ignores is where something is written (bench/results/profiles), not a file of it.
  const ignored = new Set(gitIgnored(missing.map((m) => m.path)));
  return missing.filter((m) => !ignored.has(m.path)).map((m) => `${m.file}:${m.line} -> ${m.path}`);
}

describe("repository paths named in docs and comments", function () {
  const dirs = ["api", "docs", "hooks", "lib", "test"];

  it("take a top-level folder's tokens and relative Markdown links, not URLs or absolute paths", () => {
    const text = [
      "See `lib/cspc/sync.ts:12`, hooks/http/ and [ops](operations.md#pool-pod-rollouts).",
      "Not https://example.com/docs/x.md, /var/lib/zfs, sublib/x or [site](https://x.io/a).",
    ].join("\n");
    expect(pathReferences(text, dirs, true, "docs")).to.deep.equal([
      { line: 1, path: "lib/cspc/sync.ts" },
      { line: 1, path: "hooks/http/" },
      { line: 1, path: "docs/operations.md" },
    ]);
  });

  it("skip placeholders, expand braces, match globs and accept a .js spelling of a .ts file", () => {
    const files = ["lib/cspc/sync.ts", "test/fixtures/a/x-mark/case.yaml", "test/fixtures/a/x-marked/case.yaml"];
    expect(exists("test/fixtures/<hook>/<case>/", files)).to.equal(true);
    expect(exists("docs/adr/NNNN-title.md", files)).to.equal(true);
    expect(exists("test/fixtures/a/x-{mark,marked}", files, "/nonexistent")).to.equal(false);
    expect(exists("test/fixtures/a/x-*", files)).to.equal(true);
    expect(exists("test/**/*.yaml", files)).to.equal(true);
    expect(exists("lib/**/*.md", files)).to.equal(false);
    expect(exists("lib/cspc/sync.js", files)).to.equal(true);
    expect(exists("lib/cspc/gone.ts", files)).to.equal(false);
  });

  it("find comments with the compiler's scanner, not in strings", () => {
    const source = ['const a = "// lib/not-a-comment.ts";', "// lib/one.ts", "/** lib/two.ts */", "f(); // lib/three.ts"];
    expect(scriptComments("x.ts", source.join("\n")).map((c) => [c.line, c.text])).to.deep.equal([
      [2, "// lib/one.ts"],
      [3, "/** lib/two.ts */"],
      [4, "// lib/three.ts"],
    ]);
  });

  it("name only paths that exist in the working tree", function () {
    this.timeout(60_000);
    const stale = staleReferences();
    expect(stale, `stale path references (file:line -> path):\n${stale.join("\n")}`).to.deep.equal([]);
  });
});
