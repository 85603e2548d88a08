// What a device holds, read from the device itself (docs/adr/0048-the-csi-node-reads-its-state-from-the-kernel.md):
// `blkid -p` (superblocks and partition tables, probed on the device, not from udev's cache) and, when it
// finds nothing, `wipefs --no-act --json` (every signature at every offset). A device is blank only when both
// say so; anything they cannot answer is not blank.
import { open } from "node:fs/promises";
import { CommandError } from "../../process/runner.js";
import { NodeOperationError, commandFailed } from "./errors.js";
import { run, type NodeHost } from "./host.js";

export type DeviceContents =
  | { kind: "blank" }
  | { kind: "filesystem"; fsType: string }
  /** A partition table, an md or LVM member, LUKS, swap...: what blkid or wipefs named. */
  | { kind: "other"; what: string };

/** blkid's exit code when it found nothing (also, silently, for a path it cannot open). */
const BLKID_NOTHING_FOUND = 2;

/** KEY=value lines of `blkid -o export`. */
export function parseBlkidExport(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split("\n")
      .filter((line) => line.includes("="))
      .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
  );
}

/** What `blkid -p -o export` found: a filesystem (USAGE=filesystem) by its TYPE, else what it is. */
export function contentsFromBlkid(found: Record<string, string>): DeviceContents {
  if (found.PTTYPE) return { kind: "other", what: `a ${found.PTTYPE} partition table` };
  if (found.USAGE === "filesystem" && found.TYPE) return { kind: "filesystem", fsType: found.TYPE };
  return {
    kind: "other",
    what: found.TYPE ? `${found.TYPE} (${found.USAGE ?? "unknown use"})` : "a signature",
  };
}

/** What `device` holds; throws (INTERNAL) when the probes cannot tell, never answering "blank" then. */
export async function probeDevice(host: NodeHost, volumeId: string, device: string): Promise<DeviceContents> {
  const doing = `volume ${volumeId}: probing ${device} for a filesystem`;
  // blkid exits 2 without a word for a path it cannot open: open it first, so that "nothing found" means it.
  await open(device, "r").then(
    (handle) => handle.close(),
    (error: Error) => {
      throw new NodeOperationError("INTERNAL", `${doing}: cannot read it (${error.message})`, {
        cause: error,
      });
    },
  );
  try {
    return contentsFromBlkid(parseBlkidExport(await run(host, ["blkid", "-p", "-o", "export", device])));
  } catch (error) {
    const nothing =
      error instanceof CommandError && error.exitCode === BLKID_NOTHING_FOUND && error.stderr.trim() === "";
    if (!nothing) throw commandFailed(`${doing}; refusing to format what cannot be probed`, error);
  }
  let signatures: { type?: string; offset?: string }[];
  try {
    const printed = await run(host, ["wipefs", "--no-act", "--json", device]);
    // wipefs prints nothing at all for a device without signatures.
    signatures = printed.trim() ? (JSON.parse(printed) as { signatures: typeof signatures }).signatures : [];
  } catch (error) {
    throw commandFailed(`${doing}; refusing to format what cannot be probed`, error);
  }
  if (!Array.isArray(signatures))
    throw new NodeOperationError(
      "INTERNAL",
      `${doing}: wipefs printed no signature list; refusing to format`,
    );
  if (signatures.length === 0) return { kind: "blank" };
  return {
    kind: "other",
    what: signatures.map((s) => `${s.type ?? "a signature"} at offset ${s.offset ?? "?"}`).join(", "),
  };
}
