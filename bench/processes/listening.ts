// Both benchmark servers: tell the parent the ephemeral port, and stop when the parent stops.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

export function reportListening(server: Server): void {
  server.on("listening", () => {
    const { port } = server.address() as AddressInfo;
    process.send?.({ port });
  });
  server.on("error", (err) => {
    console.error(err);
    process.exit(1);
  });
  process.on("disconnect", () => process.exit(0));
  // A normal exit, so a --cpu-prof profile (npm run bench -- --profile) is written.
  process.on("SIGTERM", () => process.exit(0));
}
