// A replica as the node daemon's file backend makes it (node-daemon/replicas.ts), for tests that serve one.
import { join } from "node:path";
import { fileBackend, type Replica } from "../../node-daemon/replicas.js";
import { MiB, type ZfsSandbox } from "../../testkit/zfs.js";

/** A 4 MiB replica of a new volume on `pool` (CSPI `cspi`), each command run by `run`; its files under `dir`. */
export function makeFileReplica(
  sandbox: ZfsSandbox,
  at: { pool: string; cspi: string },
  run: (argv: string[]) => void,
): { volume: string; replica: Replica; dir: string } {
  const volume = `vol-${sandbox.id}`;
  const replica: Replica = {
    cvr: `${volume}-${at.cspi}`,
    volume,
    replicaId: `${volume}-r1`,
    dataset: `${at.pool}/${volume}`,
    bytes: 4 * MiB,
  };
  const dir = join(sandbox.dir, "replicas");
  for (const command of fileBackend(dir).create(replica)) run([command.program, ...command.args]);
  return { volume, replica, dir };
}
