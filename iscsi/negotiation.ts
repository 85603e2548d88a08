// What both of the project's iSCSI targets offer at login: tgt for a replica (the pool agent's export) and LIO
// for the volume (the target agent's). Both default to RFC 3720's conservative values (8 KiB data segments, the
// initiator waiting for an R2T before it sends any data beyond the immediate), which makes a 1 MiB write five
// round trips and 128 PDUs; over two hops (application -> target -> replicas) that is what the target's
// benchmark measured first (docs/adr/0044-the-data-path-larger-iscsi-bursts-and-bitmap-chunks.md).
// The values here are what open-iscsi itself offers by default, so the negotiated result is these.

/** Key, value as the login negotiation spells them (tgtadm's --name/--value, LIO's tpg param files). */
export const TARGET_SESSION_PARAMETERS: readonly (readonly [string, string])[] = [
  // The largest data PDU the target accepts: the initiator sends 256 KiB segments instead of 8 KiB ones.
  ["MaxRecvDataSegmentLength", "262144"],
  // Unsolicited data up to FirstBurstLength goes with the command, without waiting for an R2T.
  ["InitialR2T", "No"],
  ["ImmediateData", "Yes"],
  ["FirstBurstLength", "262144"],
  // One R2T asks for up to 1 MiB, so a 1 MiB write needs at most one round trip after the command.
  ["MaxBurstLength", "1048576"],
];
