// Pure parsers for zpool/zfs output. They accept both current OpenZFS and zfs-fuse 0.7 (Debian), which
// differ in details: zfs-fuse has no -p/-H for `zpool list`/`zpool get`, prints "scrub:" where OpenZFS
// prints "scan:", and lists logs after spares in `zpool import`. Pool listings are read whole or not at all:
// a line that fits nowhere, a pool cut short or garbage is a ZpoolOutputError, never a guess, so the daemon
// does not act on a pool it half saw (read as missing, or as holding none of its devices).
import { formatTime } from "../lib/conditions.js";

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

/** Output of a zpool command that could not be read completely. */
export class ZpoolOutputError extends Error {
  constructor(
    readonly command: string,
    readonly reason: string,
    readonly line?: { number: number; text: string },
  ) {
    super(
      `unreadable ${command} output: ${reason}${line ? ` (line ${line.number}: ${JSON.stringify(clip(line.text))})` : ""}`,
    );
    this.name = "ZpoolOutputError";
  }
}

const SECTION_HEADINGS: ReadonlyMap<string, Section> = new Map([
  ["logs", "logs"],
  ["log", "logs"],
  ["cache", "cache"],
  ["spares", "spares"],
  ["special", "special"],
  ["dedup", "dedup"],
]);

/** Every state ZFS prints for a vdev (zpool_state_to_name), and a spare's AVAIL/INUSE. */
const VDEV_STATES: ReadonlySet<string> = new Set([
  "ONLINE",
  "DEGRADED",
  "FAULTED",
  "OFFLINE",
  "UNAVAIL",
  "REMOVED",
  "SPLIT",
  "UNKNOWN",
  "AVAIL",
  "INUSE",
]);
/** Names of vdevs that group devices (not dRAID's distributed spares, draid2-0-0): one without devices was cut off. */
const GROUP_VDEV = /^(mirror|raidz[1-3]?|replacing|spare|draid\d:\S+)-\d+$/;
const POOL_LINE = /^\s*pool: (\S+)\s*$/;
const FIELD = /^ *([a-z]+):(?: (.*))?$/;
const COUNT = /^\d+(\.\d+)?[KMGTPE]?$/;

/** How a pool-listing command prints its pools. */
interface ListingFormat {
  command: string;
  /** The whole output when there is no pool. */
  noPools: RegExp;
  /** `zpool status` prints each pool whole: at least one data vdev, then an errors: line, so a cut shows. */
  closedByErrors: boolean;
  /** Sections whose devices are listed without a state (zfs-fuse import listings: cache and spares). */
  stateless: ReadonlySet<Section>;
}

const STATUS_FORMAT: ListingFormat = {
  command: "zpool status",
  noPools: /^no pools available$/,
  closedByErrors: true,
  stateless: new Set(),
};
// zfs-fuse prints nothing (exit 0) when every pool of a cachefile is already imported.
const IMPORT_FORMAT: ListingFormat = {
  command: "zpool import",
  noPools: /^(no pools available( to import)?)?$/,
  closedByErrors: false,
  stateless: new Set(["cache", "spares"]),
};

export function emptyLayout(): Layout {
  return { data: [], logs: [], cache: [], spares: [], special: [], dedup: [] };
}

/** A pool that could not be opened has no error count, so zpool prints no errors: line for it. */
const UNOPENED_POOL_STATES = new Set(["FAULTED", "UNAVAIL"]);

/** `zpool status [pool...]`: every pool printed. "no pools available" gives []; anything not understood throws. */
export function parseZpoolStatus(text: string): PoolStatus[] {
  return parseListing(text, STATUS_FORMAT);
}

/** `zpool import [-d dir | -c cachefile]` (listing mode): the pools that could be imported. */
export function parseImportList(text: string): PoolStatus[] {
  return parseListing(text, IMPORT_FORMAT);
}

/** The lines of an output, read front to back; errors name the line. */
class LineReader {
  private index = 0;
  private readonly lines: string[];

  constructor(
    text: string,
    readonly command: string,
  ) {
    this.lines = text.split("\n");
  }

  done(): boolean {
    return this.index >= this.lines.length;
  }

  peek(): string {
    return this.lines[this.index] ?? "";
  }

  /** The next line and its number (from 1). */
  next(): { number: number; text: string } {
    const text = this.peek();
    this.index++;
    return { number: this.index, text };
  }

  skipBlank(): void {
    while (!this.done() && this.peek().trim() === "") this.index++;
  }

  error(reason: string, line?: { number: number; text: string }): ZpoolOutputError {
    return new ZpoolOutputError(this.command, reason, line);
  }
}

function parseListing(text: string, format: ListingFormat): PoolStatus[] {
  if (format.noPools.test(text.trim())) return [];
  const reader = new LineReader(text, format.command);
  const pools: PoolStatus[] = [];
  for (reader.skipBlank(); !reader.done(); reader.skipBlank()) pools.push(parsePool(reader, format));
  if (pools.length === 0) throw reader.error('nothing printed: neither a pool nor "no pools available"');
  return pools;
}

/** One pool: its header fields up to config:, its vdev tree, then its errors: line or (import) notes. */
function parsePool(reader: LineReader, format: ListingFormat): PoolStatus {
  const first = reader.next();
  const name = POOL_LINE.exec(first.text)?.[1];
  if (!name) throw reader.error('expected a pool ("  pool: <name>") or "no pools available"', first);
  const fields = parseHeader(reader, name, first);
  if (!fields.state) throw reader.error(`pool ${name} has no state: line`, first);
  const layout = parseTree(reader, format, name);
  if (format.closedByErrors && !UNOPENED_POOL_STATES.has(fields.state)) skipErrorsLine(reader, name);
  else skipNotes(reader, name);
  const scanText = fields.scan ?? fields.scrub ?? "";
  const pool: PoolStatus = { name, state: fields.state, scan: parseScan(scanText), layout };
  if (fields.id) pool.id = fields.id;
  if (fields.status) pool.status = fields.status;
  if (fields.action) pool.action = fields.action;
  return pool;
}

/** A pool's fields (state:, status:, scan: ...) by name, up to and without its config: line. */
function parseHeader(
  reader: LineReader,
  name: string,
  first: { number: number; text: string },
): Record<string, string> {
  const fields: Record<string, string> = {};
  let key = "pool";
  for (;;) {
    if (reader.done() || POOL_LINE.test(reader.peek()))
      throw reader.error(`pool ${name} ends before its vdev tree (no config: section)`, first);
    const line = reader.next();
    if (line.text.trim() === "") continue;
    // Multi-line fields (status:, action:, scan: progress) go on in tab-indented lines.
    if (line.text.startsWith("\t")) {
      fields[key] = `${fields[key] ?? ""} ${line.text.trim()}`.trim();
      continue;
    }
    const field = FIELD.exec(line.text);
    if (!field) throw reader.error(`pool ${name}: neither a field nor the continuation of one`, line);
    key = field[1]!;
    if (key === "config") return fields;
    fields[key] = (field[2] ?? "").trim();
  }
}

function skipErrorsLine(reader: LineReader, name: string): void {
  reader.skipBlank();
  if (reader.done()) throw reader.error(`pool ${name} ends before its errors: line`);
  const line = reader.next();
  if (!line.text.startsWith("errors: "))
    throw reader.error(`pool ${name}: expected its errors: line after the vdev tree`, line);
}

/** Import listings (and a pool that could not be opened) may explain the pool after its tree, in tab-indented lines. */
function skipNotes(reader: LineReader, name: string): void {
  for (reader.skipBlank(); !reader.done() && !POOL_LINE.test(reader.peek()); reader.skipBlank()) {
    const line = reader.next();
    if (!line.text.startsWith("\t"))
      throw reader.error(`pool ${name}: neither a note on the pool nor the next pool`, line);
  }
}

export function parseScan(text: string): Scan {
  const lower = text.toLowerCase();
  const activity: Scan["activity"] =
    lower === "" || lower.startsWith("none")
      ? "none"
      : lower.includes("resilver")
        ? "resilver"
        : lower.includes("scrub")
          ? "scrub"
          : "other";
  return { activity, inProgress: lower.includes("in progress"), text };
}

interface TreeLine {
  depth: number;
  tokens: string[];
  line: { number: number; text: string };
}

/** The vdev tree: tab-indented lines, two spaces per level, the pool first, section headings at its depth. */
function parseTree(reader: LineReader, format: ListingFormat, pool: string): Layout {
  reader.skipBlank();
  const lines: TreeLine[] = [];
  while (!reader.done() && reader.peek().startsWith("\t") && reader.peek().trim() !== "") {
    const line = reader.next();
    const body = line.text.slice(1);
    const tokens = body.trim().split(/\s+/);
    if (lines.length === 0 && tokens[0] === "NAME" && tokens[1] === "STATE") continue;
    const spaces = body.length - body.trimStart().length;
    if (spaces % 2 !== 0)
      throw reader.error(`pool ${pool}: a vdev indented by an odd number of spaces`, line);
    lines.push({ depth: spaces / 2, tokens, line });
  }
  const root = lines[0];
  if (!root) throw reader.error(`pool ${pool} ends before its vdev tree (nothing under config:)`);
  if (root.depth !== 0 || root.tokens[0] !== pool || !VDEV_STATES.has(root.tokens[1] ?? "")) {
    throw reader.error(
      `the vdev tree of pool ${pool} starts with ${root.tokens[0]}, not with the pool and its state`,
      root.line,
    );
  }
  const layout = emptyLayout();
  let section: Section = "data";
  const stack: Vdev[] = [];
  let previousDepth = 0;
  for (let i = 1; i < lines.length; i++) {
    const { depth, tokens, line } = lines[i];
    if (depth === 0) {
      const heading = SECTION_HEADINGS.get(tokens[0]);
      if (!heading || tokens.length !== 1)
        throw reader.error(
          `pool ${pool}: neither a vdev nor a section heading (logs, cache, spares...)`,
          line,
        );
      section = heading;
      stack.length = 0;
      previousDepth = 0;
      continue;
    }
    if (depth > previousDepth + 1)
      throw reader.error(`pool ${pool}: a vdev indented deeper than its parent`, line);
    const stateless = tokens.length === 1 && format.stateless.has(section);
    if (!stateless && !VDEV_STATES.has(tokens[1] ?? ""))
      throw reader.error(`pool ${pool}: a vdev line without a known state`, line);
    const hasChildren = (lines[i + 1]?.depth ?? 0) > depth;
    if (!hasChildren && GROUP_VDEV.test(tokens[0]))
      throw reader.error(`pool ${pool}: ${tokens[0]} has no devices under it`, line);
    const vdev = vdevFromTokens(tokens, hasChildren);
    stack.length = depth - 1;
    const parent = stack[depth - 2];
    if (parent) parent.children.push(vdev);
    else layout[section].push(vdev);
    stack[depth - 1] = vdev;
    previousDepth = depth;
  }
  if (format.closedByErrors && layout.data.length === 0)
    throw reader.error(`pool ${pool} lists no data vdev`, root.line);
  return layout;
}

function vdevFromTokens(tokens: string[], interior: boolean): Vdev {
  const [name = "", state = "", ...rest] = tokens;
  let errors: VdevErrors | undefined;
  let noteTokens = rest;
  if (rest.length >= 3 && rest.slice(0, 3).every((t) => COUNT.test(t))) {
    errors = { read: parseCount(rest[0]), write: parseCount(rest[1]), checksum: parseCount(rest[2]) };
    noteTokens = rest.slice(3);
  }
  const note = noteTokens.join(" ");
  const vdev: Vdev = { name, kind: interior ? interiorKind(name) : "disk", state, children: [] };
  if (!interior) {
    const was = /(?:^|\s)was (\S+)/.exec(note);
    vdev.device = was ? was[1] : name;
  }
  if (errors) vdev.errors = errors;
  if (note) vdev.note = note;
  return vdev;
}

function interiorKind(name: string): string {
  const base = name.replace(/-\d+$/, "");
  return base === "raidz" ? "raidz1" : base;
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
}

function parseCount(token: string): number {
  return Math.round(parseSize(token) ?? 0);
}

const UNITS: Record<string, number> = {
  "": 1,
  B: 1,
  K: 2 ** 10,
  M: 2 ** 20,
  G: 2 ** 30,
  T: 2 ** 40,
  P: 2 ** 50,
  E: 2 ** 60,
};

/** ZFS human sizes ("123M", "1.50G", "512", "0") in bytes; "-" and garbage give undefined. */
export function parseSize(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)([BKMGTPE]?)(?:i?B)?$/.exec(text.trim());
  if (!match) return undefined;
  return Number(match[1]) * UNITS[match[2]];
}

/** What `zpool list POOL` prints of a pool's raw space: sizes in bytes, fragmentation as a ratio (0..1). */
export interface PoolListing {
  size?: number;
  allocated?: number;
  free?: number;
  /** OpenZFS only (FRAG); zfs-fuse 0.7 has no such column. */
  fragmentation?: number;
}

/**
 * `zpool list POOL` with its header, read by column name: the default columns are all either knows (zfs-fuse
 * 0.7: SIZE ALLOC FREE CAP DEDUP HEALTH; OpenZFS adds FRAG), so one command serves both, and a value printed
 * as "-" is left out.
 */
export function parseZpoolList(text: string, pool: string): PoolListing {
  const lines = text.split("\n").filter((line) => line.trim() !== "");
  const header = lines[0]?.trim().split(/\s+/) ?? [];
  const row = lines
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .find((cells) => cells[0] === pool);
  if (header[0] !== "NAME" || !row || row.length !== header.length) {
    throw new ZpoolOutputError("zpool list", `no row for pool ${pool} under a NAME header`);
  }
  const cell = (column: string) => {
    const index = header.indexOf(column);
    return index < 0 ? undefined : row[index];
  };
  const listing: PoolListing = {};
  const sizes = { size: "SIZE", allocated: "ALLOC", free: "FREE" } as const;
  for (const [field, column] of Object.entries(sizes) as [keyof typeof sizes, string][]) {
    const bytes = parseSize(cell(column) ?? "-");
    if (bytes !== undefined) listing[field] = bytes;
  }
  const frag = /^(\d+(?:\.\d+)?)%$/.exec(cell("FRAG") ?? "");
  if (frag) listing.fragmentation = Number(frag[1]) / 100;
  return listing;
}

/** How far a running scan is, 0..1, from its "NN.NN% done" (both zfs-fuse and OpenZFS print it); undefined when none. */
export function scanProgress(scan: Scan): number | undefined {
  if (!scan.inProgress) return undefined;
  const match = /(\d+(?:\.\d+)?)% done/.exec(scan.text);
  return match ? Math.min(1, Number(match[1]) / 100) : undefined;
}

/** A pool's last scrub as `zpool status` tells it; dates as RFC 3339 (the daemon runs zpool with TZ=UTC). */
export interface ScrubReading {
  state: "Scrubbing" | "Finished" | "Canceled";
  startTime?: string;
  endTime?: string;
  /** As zpool prints it: "42.17%". */
  progress?: string;
  repairedBytes?: number;
  /** Errors found and not repaired ("with N errors"). */
  errors?: number;
  /** zfs-fuse prints how long a running scrub has run ("for 0h3m"), not when it started. */
  elapsedSeconds?: number;
}

const CTIME = String.raw`([A-Z][a-z]{2}) ([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})`;
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** ctime(3) text after `word` ("on Tue Nov 24 10:12:20 2026"), read as UTC; undefined when absent or not a date. */
function ctimeAfter(text: string, word: string): string | undefined {
  const match = new RegExp(`\\b${word} ${CTIME}`).exec(text);
  const month = match ? MONTHS.indexOf(match[2]) : -1;
  if (!match || month < 0) return undefined;
  const [, , , day, hours, minutes, seconds, year] = match.map(Number);
  return formatTime(new Date(Date.UTC(year, month, day, hours, minutes, seconds)));
}

/**
 * The scrub in a pool's scan line, in both dialects (undefined when the line is about no scrub: none
 * requested, a resilver). zfs-fuse 0.7: "scrub in progress for 0h0m, 12.34% done, 0h1m to go", "scrub
 * completed after 0h0m with 0 errors on <ctime>", "scrub stopped after ..."; its repaired bytes are only in
 * the members' "26.6M repaired" notes. OpenZFS: "scrub in progress since <ctime> ... 0B repaired, 5.00% done",
 * "scrub repaired 0B in 00:00:01 with 0 errors on <ctime>", "scrub canceled on <ctime>".
 */
export function parseScrub(pool: Pick<PoolStatus, "scan" | "layout">): ScrubReading | undefined {
  const { scan } = pool;
  if (scan.activity !== "scrub") return undefined;
  const text = scan.text;
  const reading: ScrubReading = {
    state: scan.inProgress ? "Scrubbing" : /\b(stopped|canceled)\b/.test(text) ? "Canceled" : "Finished",
  };
  if (!scan.inProgress && !/\b(completed|repaired|stopped|canceled)\b/.test(text)) return undefined;
  const end = scan.inProgress ? undefined : ctimeAfter(text, "on");
  const took = durationSeconds(text);
  const start =
    ctimeAfter(text, "since") ??
    (end && took !== undefined ? formatTime(new Date(Date.parse(end) - took * 1000)) : undefined);
  if (start) reading.startTime = start;
  if (end) reading.endTime = end;
  const elapsed = /in progress for (\d+)h(\d+)m/.exec(text);
  if (elapsed) reading.elapsedSeconds = (Number(elapsed[1]) * 60 + Number(elapsed[2])) * 60;
  const progress = /(\d+(?:\.\d+)?%) done/.exec(text);
  if (progress && scan.inProgress) reading.progress = progress[1];
  const errors = /with (\d+) errors?/.exec(text);
  if (errors) reading.errors = Number(errors[1]);
  const repaired = /(?:scrub repaired (\S+) in|(\S+) repaired,)/.exec(text);
  const bytes = repaired ? parseSize(repaired[1] ?? repaired[2]) : memberRepairs(pool.layout);
  if (bytes !== undefined) reading.repairedBytes = Math.round(bytes);
  return reading;
}

/** How long a finished or stopped scan took: zfs-fuse and OpenZFS 0.x "after|in 1h2m", OpenZFS 2.x "in [N days ]01:02:03". */
function durationSeconds(text: string): number | undefined {
  const minutes = /\b(?:after|in) (\d+)h(\d+)m\b/.exec(text);
  if (minutes) return (Number(minutes[1]) * 60 + Number(minutes[2])) * 60;
  const clock = /\bin (?:(\d+) days? )?(\d+):(\d{2}):(\d{2})\b/.exec(text);
  if (clock)
    return (
      Number(clock[1] ?? 0) * 86_400 + Number(clock[2]) * 3600 + Number(clock[3]) * 60 + Number(clock[4])
    );
  return undefined;
}

/** zfs-fuse puts what a scrub repaired beside each member ("26.6M repaired"); undefined when no member says. */
function memberRepairs(layout: Layout): number | undefined {
  const sizes = allLeaves(layout).flatMap((leaf) => {
    const match = /(\S+) repaired/.exec(leaf.note ?? "");
    const bytes = match ? parseSize(match[1]) : undefined;
    return bytes === undefined ? [] : [bytes];
  });
  return sizes.length > 0 ? sizes.reduce((a, b) => a + b, 0) : undefined;
}

/** `zfs get -H -p -o value a,b pool`: one value per line, in the order asked. */
export function parseValueLines(text: string, expected: number): string[] {
  const values = text.split("\n").filter((line) => line !== "");
  if (values.length !== expected) {
    throw new Error(
      `expected ${expected} values, zfs printed ${values.length}: ${JSON.stringify(text.slice(0, 200))}`,
    );
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

/** One dataset below a pool with the properties asked for; "-" (unset) is left out. */
export interface DatasetRecord {
  name: string;
  properties: Record<string, string>;
}

/**
 * `zfs get -H -p -r -o name,property,value <props> <pool>`: one row per dataset and property. zfs-fuse 0.7 has
 * no `zfs list -p` and no `zfs get -t`, so this is the one form both read exactly. Rows are grouped by dataset
 * in the order zfs printed them; a row that is not three tab-separated fields is refused, not skipped.
 */
export function parseDatasetProperties(text: string): DatasetRecord[] {
  const byName = new Map<string, DatasetRecord>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const fields = line.split("\t");
    if (fields.length !== 3 || !fields[0] || !fields[1])
      throw new Error(`unreadable zfs get output line: ${JSON.stringify(line.slice(0, 200))}`);
    const [name, property, value] = fields;
    let record = byName.get(name);
    if (!record) byName.set(name, (record = { name, properties: {} }));
    if (value !== "-") record.properties[property] = value;
  }
  return [...byName.values()];
}

/** A snapshot of a dataset below a pool, `<dataset>@<name>`, with the properties read of it. */
export interface SnapshotRecord {
  dataset: string;
  name: string;
  properties: Record<string, string>;
}

/** What a pool holds below its root dataset: filesystems and volumes, and their snapshots, each sorted by name. */
export interface PoolContents {
  datasets: DatasetRecord[];
  snapshots: SnapshotRecord[];
}

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * One pool's records of a `zfs get -r` (its root, other pools and bookmarks left out) as datasets and snapshots,
 * keeping `type` and the properties asked for (all when none are named).
 */
export function poolContents(
  pool: string,
  records: readonly DatasetRecord[],
  properties?: readonly string[],
): PoolContents {
  const kept = properties && new Set(["type", ...properties]);
  const keep = (record: DatasetRecord) =>
    kept
      ? Object.fromEntries(Object.entries(record.properties).filter(([property]) => kept.has(property)))
      : record.properties;
  const contents: PoolContents = { datasets: [], snapshots: [] };
  for (const record of records) {
    if (!record.name.startsWith(`${pool}/`)) continue;
    const type = record.properties.type;
    if (type === "filesystem" || type === "volume")
      contents.datasets.push({ name: record.name, properties: keep(record) });
    else if (type === "snapshot") {
      const at = record.name.indexOf("@");
      contents.snapshots.push({
        dataset: record.name.slice(0, at),
        name: record.name.slice(at + 1),
        properties: keep(record),
      });
    }
  }
  contents.datasets.sort((a, b) => compareText(a.name, b.name));
  contents.snapshots.sort((a, b) => compareText(a.dataset, b.dataset) || compareText(a.name, b.name));
  return contents;
}

/** The datasets' usedbysnapshots summed; undefined when one of them does not say (not read). */
export function snapshotBytes(datasets: readonly DatasetRecord[]): number | undefined {
  let sum = 0;
  for (const dataset of datasets) {
    const bytes = dataset.properties.usedbysnapshots;
    if (bytes === undefined || !/^\d+$/.test(bytes)) return undefined;
    sum += Number(bytes);
  }
  return sum;
}

/** What is read of one imported pool besides its status: `zpool list`, `zfs get`, `zpool get`. */
export interface PoolFacts {
  /** `zpool list`: raw size of the data vdevs, bytes. */
  size?: number;
  /** `zpool list`: raw bytes allocated and free, and fragmentation (0..1, OpenZFS only). */
  allocated?: number;
  free?: number;
  fragmentation?: number;
  /** Root dataset space, bytes (`zfs get -p used,available`). */
  space?: { used: number; available: number };
  /** The datasets below the pool with their size and io.openebs:* properties: what the replica planner reads. */
  datasets?: DatasetRecord[];
  /** Their snapshots, with when each was taken, what it uses and whether a deferred destroy waits on it. */
  snapshots?: SnapshotRecord[];
  /** Bytes the snapshots alone hold (the datasets' usedbysnapshots, summed): what destroying them all frees. */
  snapshotBytes?: number;
  compression?: string;
  readonly?: boolean;
  /** The pool's cachefile property; "" when none. */
  cachefile?: string;
}

/**
 * The facts of several pools from one command of each kind (zfs/host.ts, snapshot): `zpool list
 * <pools>` (with its header), `zfs get -H -p -r -o name,property,value` over the pools, and the `zpool get cachefile` table. A
 * pool is left out when any of its facts is missing, so that it is read on its own, exactly as before.
 */
export function parsePoolFacts(
  pools: readonly string[],
  output: { sizes: string; datasets: string; cachefiles: string },
  datasetProperties: readonly string[],
): Map<string, PoolFacts> {
  const cachefiles = new Map<string, string>();
  for (const line of output.cachefiles.split("\n").slice(1)) {
    const [name, property, value] = line.trim().split(/\s+/);
    if (name && property === "cachefile" && value !== undefined) cachefiles.set(name, value);
  }
  const byPool = new Map<string, DatasetRecord[]>();
  for (const record of parseDatasetProperties(output.datasets)) {
    const pool = record.name.split("/")[0];
    const list = byPool.get(pool);
    if (list) list.push(record);
    else byPool.set(pool, [record]);
  }
  const facts = new Map<string, PoolFacts>();
  for (const pool of pools) {
    const records = byPool.get(pool) ?? [];
    const root = records.find((record) => record.name === pool)?.properties;
    const used = Number(root?.used);
    const available = Number(root?.available);
    const cachefile = cachefiles.get(pool);
    const listing = listingOf(output.sizes, pool);
    if (!root || !Number.isFinite(used) || !Number.isFinite(available) || !listing || cachefile === undefined)
      continue;
    const contents = poolContents(pool, records, datasetProperties);
    const poolFacts: PoolFacts = {
      space: { used, available },
      ...contents,
      cachefile: cachefileSetting(cachefile),
      ...listing,
    };
    const snapshots = snapshotBytes(contents.datasets);
    if (snapshots !== undefined) poolFacts.snapshotBytes = snapshots;
    if (root.compression !== undefined) poolFacts.compression = root.compression;
    if (root.readonly !== undefined) poolFacts.readonly = root.readonly === "on";
    facts.set(pool, poolFacts);
  }
  return facts;
}

/** The pool's row of a `zpool list` of several pools; undefined when it has none. */
function listingOf(text: string, pool: string): PoolListing | undefined {
  try {
    return parseZpoolList(text, pool);
  } catch {
    return undefined;
  }
}

/** "-" (zfs-fuse) and "none" both mean no cachefile; OpenZFS prints "-" for the default one. */
export function cachefileSetting(value: string): string {
  return value === "-" || value === "none" ? "" : value;
}
