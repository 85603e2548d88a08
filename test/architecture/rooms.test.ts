// The rooms of the code and which may import which (README.md, "Where things are"). The shared rooms hold
// what every host-side program needs (the process runner, the ZFS host, the tgt helpers, the runtime's I/O):
// the node daemon, the pool agent and the programs to come import them, never each other. lib/ is the pure
// domain, importing only api/, the one API definition, which imports no other room. Every .ts file's imports are read, and a failure names
// the file, its line and the import.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { expect } from "chai";
import ts from "typescript";
import { REPO_ROOT } from "../../testkit/kube.js";

const SHARED_ROOMS = ["process", "zfs", "iscsi", "md", "runtime"];
const PROGRAMS = ["node-daemon", "pool-agent", "volume-target", "csi", "hooks", "cli"];
/** The programs that run on a node, each in its own pod: what two of them need is in a shared room. */
const NODE_PROGRAMS = ["node-daemon", "pool-agent", "volume-target", "csi"];
/** What only runtime/ and the programs may touch: the network, files, other processes, the apiserver, HTTP. */
const IO_MODULE = /^(node:)?(https?|net|fs|child_process)(\/.*)?$|^(@kubernetes\/client-node|express)$/;
const SKIPPED = new Set(["node_modules", "dist", "coverage", "fixtures", ".build", ".git"]);

interface Source {
  /** Repository-relative, with "/". */
  path: string;
  text: string;
}

interface Import {
  /** The file that imports, and the line of the import. */
  from: string;
  line: number;
  /** As written. */
  specifier: string;
  /** Repository-relative path for a relative import; undefined for a package or node: module. */
  target?: string;
}

function sources(dir: string): Source[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return SKIPPED.has(entry.name) ? [] : sources(path);
    if (!entry.name.endsWith(".ts")) return [];
    return [{ path: relative(REPO_ROOT, path), text: readFileSync(path, "utf8") }];
  });
}

function importsOf(source: Source): Import[] {
  const lineOf = (pos: number) => source.text.slice(0, pos).split("\n").length;
  return ts.preProcessFile(source.text, true, true).importedFiles.map((file) => {
    const specifier = file.fileName;
    const found: Import = { from: source.path, line: lineOf(file.pos), specifier };
    if (specifier.startsWith(".")) {
      found.target = join(dirname(source.path), specifier).replace(/\.js$/, ".ts");
    }
    return found;
  });
}

/** `process.` as code, not in a comment or a string. */
function processUses(source: Source): number[] {
  const file = ts.createSourceFile(source.path, source.text, ts.ScriptTarget.Latest, true);
  const lines: number[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isPropertyAccessExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === "process"
    ) {
      lines.push(file.getLineAndCharacterOfPosition(node.getStart()).line + 1);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return lines;
}

const roomOf = (path: string): string => path.split("/")[0];
const inRoom = (path: string | undefined, rooms: readonly string[]): boolean =>
  path !== undefined && rooms.includes(roomOf(path));
const shown = (found: Import): string => `${found.from}:${found.line} imports "${found.specifier}"`;

describe("architecture: which room may import which", () => {
  const files = sources(REPO_ROOT);
  const imports = files.flatMap(importsOf);

  it("reads the imports of every room", () => {
    for (const room of ["api", "lib", ...SHARED_ROOMS, ...PROGRAMS])
      expect(
        files.some((f) => roomOf(f.path) === room),
        `no .ts file under ${room}/`,
      ).to.equal(true);
    expect(imports.length).to.be.greaterThan(500);
  });

  it("keeps the node daemon, the pool agent, the volume target and the CSI driver apart: what two need is in a shared room", () => {
    const crossing = imports.filter(
      (i) =>
        inRoom(i.from, NODE_PROGRAMS) &&
        inRoom(i.target, NODE_PROGRAMS) &&
        roomOf(i.from) !== roomOf(i.target!),
    );
    expect(crossing.map(shown)).to.deep.equal([]);
  });

  it("lets no shared room import a program", () => {
    const upward = imports.filter((i) => inRoom(i.from, SHARED_ROOMS) && inRoom(i.target, PROGRAMS));
    expect(upward.map(shown)).to.deep.equal([]);
  });

  it("keeps lib/ pure: no network, file, process or apiserver I/O (that is runtime/'s)", () => {
    const libFiles = files.filter((f) => roomOf(f.path) === "lib");
    const io = imports.filter((i) => roomOf(i.from) === "lib" && IO_MODULE.test(i.specifier)).map(shown);
    const processTouched = libFiles.flatMap((f) =>
      processUses(f).map((line) => `${f.path}:${line} touches process.`),
    );
    expect([...io, ...processTouched]).to.deep.equal([]);
  });

  it("keeps lib/ beneath every other room: it imports only api/ and itself", () => {
    const above = imports.filter(
      (i) => roomOf(i.from) === "lib" && i.target !== undefined && !inRoom(i.target, ["api", "lib"]),
    );
    expect(above.map(shown)).to.deep.equal([]);
  });

  it("keeps api/ at the bottom: the API definition imports no other room, the domain least of all", () => {
    const above = imports.filter(
      (i) => roomOf(i.from) === "api" && i.target !== undefined && !inRoom(i.target, ["api"]),
    );
    expect(above.map(shown)).to.deep.equal([]);
  });

  it("has no import cycle within a shared room", () => {
    const edges = new Map<string, string[]>();
    for (const i of imports) {
      if (!inRoom(i.from, SHARED_ROOMS) || !i.target || roomOf(i.target) !== roomOf(i.from)) continue;
      edges.set(i.from, [...(edges.get(i.from) ?? []), i.target]);
    }
    const reaches = (from: string, to: string): boolean => {
      const seen = new Set([from]);
      const queue = [from];
      for (let at = queue.shift(); at !== undefined; at = queue.shift())
        for (const next of edges.get(at) ?? []) {
          if (next === to) return true;
          if (seen.has(next)) continue;
          seen.add(next);
          queue.push(next);
        }
      return false;
    };
    const cycles = imports
      .filter((i) => i.target && edges.get(i.from)?.includes(i.target) && reaches(i.target, i.from))
      .map((i) => `${shown(i)}, which leads back to ${i.from}`);
    expect(cycles).to.deep.equal([]);
  });
});
