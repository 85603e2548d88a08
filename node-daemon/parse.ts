// Pure parsers for zpool/zfs output. They accept both current OpenZFS and zfs-fuse 0.7 (Debian), which
// differ in details: zfs-fuse has no -p/-H for `zpool list`/`zpool get`, prints "scrub:" where OpenZFS
// prints "scan:", and lists logs after spares in `zpool import`. Unknown lines are ignored, never guessed.

/** Where a vdev sits in the pool layout. */
export type Section = "data" | "logs" | "cache" | "spares" | "special" | "dedup";

export interface VdevErrors {
  read: number;
  write: number;
  checksum: number;
}

export interface Vdev {
  /** As zpool prints it, which is what zpool commands accept (a path, a short name such as loop0, or a guid). */
  name: string;
  /** A leaf's device: its name, or the path after "was" when ZFS shows a missing device by guid. */
  device?: string;
  /** mirror, raidz1, raidz2, raidz3, replacing, spare, draid... for interior vdevs; "disk" for leaves. */
  kind: string;
  /** ONLINE, DEGRADED, FAULTED, OFFLINE, UNAVAIL, REMOVED, AVAIL, INUSE; "" when not printed. */
  state: string;
  errors?: VdevErrors;
  /** Whatever follows the columns: "cannot open", "was /dev/sdb", "(resilvering)", "61.4M resilvered"... */
  note?: string;
  children: Vdev[];
}

export type Layout = Record<Section, Vdev[]>;

export interface Scan {
  activity: "none" | "resilver" | "scrub" | "other";
  inProgress: boolean;
  /** The scan line(s) as printed, for messages. */
  text: string;
}

export interface PoolStatus {
  name: string;
  /** Numeric pool id, printed by `zpool import` listings. */
  id?: string;
  state: string;
  /** The status:/action: explanation ZFS prints for unhealthy pools. */
  status?: string;
  action?: string;
  scan: Scan;
  layout: Layout;
}

const SECTION_HEADINGS: Record<string, Section> = {
  logs: "logs",
  log: "logs",
  cache: "cache",
  spares: "spares",
  special: "special",
  dedup: "dedup",
};

const COUNT = /^\d+(\.\d+)?[KMGTPE]?$/;

export function emptyLayout(): Layout {
  return { data: [], logs: [], cache: [], spares: [], special: [], dedup: [] };
}

/** `zpool status [pool...]`: every pool printed. "no pools available" gives []. */
export function parseZpoolStatus(text: string): PoolStatus[] {
  return splitPools(text).map(parsePoolBlock);
}

/** `zpool import [-d dir | -c cachefile]` (listing mode): the pools that could be imported. */
export function parseImportList(text: string): PoolStatus[] {
  return splitPools(text).map(parsePoolBlock);
}

function splitPools(text: string): string[][] {
  const blocks: string[][] = [];
  for (const line of text.split("\n")) {
    if (/^\s*pool: /.test(line)) blocks.push([]);
    blocks.at(-1)?.push(line);
  }
  return blocks;
}

function parsePoolBlock(lines: string[]): PoolStatus {
  const fields: Record<string, string> = {};
  let key: string | undefined;
  let index = 0;
  for (; index < lines.length; index++) {
    const line = lines[index]!;
    const field = /^\s*([a-z]+):\s?(.*)$/.exec(line);
    if (field && !line.startsWith("\t")) {
      key = field[1]!;
      if (key === "config") {
        index++;
        break;
      }
      fields[key] = field[2]!.trim();
    } else if (key && line.trim() !== "") {
      // Continuation of a multi-line field (status:, action:, scan: progress lines).
      fields[key] = `${fields[key]} ${line.trim()}`.trim();
    }
  }
  const scanText = fields.scan ?? fields.scrub ?? "";
  const pool: PoolStatus = {
    name: fields.pool ?? "",
    state: fields.state ?? "",
    scan: parseScan(scanText),
    layout: parseConfig(lines.slice(index)),
  };
  if (fields.id) pool.id = fields.id;
  if (fields.status) pool.status = fields.status;
  if (fields.action) pool.action = fields.action;
  return pool;
}

export function parseScan(text: string): Scan {
  const lower = text.toLowerCase();
  const activity: Scan["activity"] =
    lower === "" || lower.startsWith("none") ? "none" : lower.includes("resilver") ? "resilver" : lower.includes("scrub") ? "scrub" : "other";
  return { activity, inProgress: lower.includes("in progress"), text };
}

interface TreeLine {
  depth: number;
  tokens: string[];
}

function parseConfig(lines: string[]): Layout {
  const layout = emptyLayout();
  const treeLines: TreeLine[] = [];
  for (const line of lines) {
    if (!line.startsWith("\t")) {
      if (treeLines.length > 0 && line.trim() !== "") break; // "errors: ..." ends the tree
      continue;
    }
    const body = line.slice(1);
    const tokens = body.trim().split(/\s+/);
    if (tokens[0] === "NAME" && tokens[1] === "STATE") continue;
    if (tokens[0] === "") continue;
    const spaces = body.length - body.trimStart().length;
    treeLines.push({ depth: Math.floor(spaces / 2), tokens });
  }
  if (treeLines.length === 0) return layout;
  // The first line is the pool itself; sections (logs, cache, spares) are headings at the pool's depth.
  let section: Section = "data";
  const stack: Vdev[] = [];
  for (let i = 1; i < treeLines.length; i++) {
    const { depth, tokens } = treeLines[i]!;
    if (depth === 0) {
      const heading = SECTION_HEADINGS[tokens[0]!];
      if (heading && tokens.length === 1) section = heading;
      stack.length = 0;
      continue;
    }
    const hasChildren = (treeLines[i + 1]?.depth ?? 0) > depth;
    const vdev = vdevFromTokens(tokens, hasChildren);
    stack.length = depth - 1;
    const parent = stack[depth - 2];
    if (parent) parent.children.push(vdev);
    else layout[section].push(vdev);
    stack[depth - 1] = vdev;
  }
  return layout;
}

function vdevFromTokens(tokens: string[], interior: boolean): Vdev {
  const [name = "", state = "", ...rest] = tokens;
  let errors: VdevErrors | undefined;
  let noteTokens = rest;
  if (rest.length >= 3 && rest.slice(0, 3).every((t) => COUNT.test(t))) {
    errors = { read: parseCount(rest[0]!), write: parseCount(rest[1]!), checksum: parseCount(rest[2]!) };
    noteTokens = rest.slice(3);
  }
  const note = noteTokens.join(" ");
  const vdev: Vdev = { name, kind: interior ? interiorKind(name) : "disk", state, children: [] };
  if (!interior) {
    const was = /(?:^|\s)was (\S+)/.exec(note);
    vdev.device = was ? was[1]! : name;
  }
  if (errors) vdev.errors = errors;
  if (note) vdev.note = note;
  return vdev;
}

function interiorKind(name: string): string {
  const base = name.replace(/-\d+$/, "");
  return base === "raidz" ? "raidz1" : base;
}

function parseCount(token: string): number {
  return Math.round(parseSize(token) ?? 0);
}

const UNITS: Record<string, number> = { "": 1, B: 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40, P: 2 ** 50, E: 2 ** 60 };

/** ZFS human sizes ("123M", "1.50G", "512", "0") in bytes; "-" and garbage give undefined. */
export function parseSize(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)([BKMGTPE]?)(?:i?B)?$/.exec(text.trim());
  if (!match) return undefined;
  return Number(match[1]) * UNITS[match[2]!]!;
}

/** `zfs get -H -p -o value a,b pool`: one value per line, in the order asked. */
export function parseValueLines(text: string, expected: number): string[] {
  const values = text.split("\n").filter((line) => line !== "");
  if (values.length !== expected) {
    throw new Error(`expected ${expected} values, zfs printed ${values.length}: ${JSON.stringify(text.slice(0, 200))}`);
  }
  return values;
}

/** `zpool get prop pool` as a table (zfs-fuse has no -H): NAME PROPERTY VALUE SOURCE. */
export function parseGetTable(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split("\n").filter((line) => line.trim() !== "");
  for (const line of lines.slice(1)) {
    const [, property, value] = line.trim().split(/\s+/);
    if (property && value !== undefined) out[property] = value;
  }
  return out;
}

/** Every leaf device of a vdev list, depth first. */
export function leaves(vdevs: readonly Vdev[]): Vdev[] {
  const out: Vdev[] = [];
  const walk = (v: Vdev): void => {
    if (v.children.length === 0) out.push(v);
    else v.children.forEach(walk);
  };
  vdevs.forEach(walk);
  return out;
}

export function allLeaves(layout: Layout): Vdev[] {
  return (Object.keys(layout) as Section[]).flatMap((section) => leaves(layout[section]));
}
