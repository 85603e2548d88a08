// The snapshot list a volume's target keeps on each of its CStorVolumeReplicas, as the replica's node daemon
// reads it (docs/adr/0053-the-node-daemons-snapshots-one-zfs-get-deferred.md). Pure.
import { ANNOTATION } from "../../api/constants.js";
import { isDnsSubdomain } from "../names.js";

/**
 * What `cstor.openebs.io/snapshots` says: the snapshots that must exist (an empty value: none), unknown
 * (absent), or unreadable. Only a listed one lets a snapshot be destroyed: the other two destroy nothing.
 */
export type SnapshotList =
  | { state: "listed"; names: ReadonlySet<string> }
  | { state: "absent" }
  | { state: "unreadable"; problem: string };

/** The annotation's entries as written, trimmed: undefined when it is absent, none when it is empty. */
export function snapshotListEntries(
  annotations: Readonly<Record<string, string>> | undefined,
): string[] | undefined {
  const value = annotations?.[ANNOTATION.replicaSnapshots];
  if (value === undefined) return undefined;
  return value.trim() === "" ? [] : value.split(",").map((name) => name.trim());
}

/** The annotation's value that lists `names` (empty: none must exist). */
export function snapshotListValue(names: readonly string[]): string {
  return names.join(",");
}

export function readSnapshotList(annotations: Readonly<Record<string, string>> | undefined): SnapshotList {
  const names = snapshotListEntries(annotations);
  if (names === undefined) return { state: "absent" };
  for (const name of names) {
    const problem = snapshotNameProblem(name);
    if (problem)
      return {
        state: "unreadable",
        problem:
          `annotation ${ANNOTATION.replicaSnapshots} must be CStorVolumeSnapshot names separated by commas (empty when ` +
          `none must exist); its entry ${quotedName(name)} ${problem}`,
      };
  }
  return { state: "listed", names: new Set(names) };
}

/** Why a name cannot be a CStorVolumeSnapshot's (a DNS-1123 subdomain); undefined when it can. */
export function snapshotNameProblem(name: string): string | undefined {
  if (isDnsSubdomain(name)) return undefined;
  return "is not a CStorVolumeSnapshot name (at most 253 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit)";
}

/** A name read from an annotation, quoted and cut short: it goes into a status message of bounded length. */
export function quotedName(name: string): string {
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}...` : name);
}
