import { createHash } from "node:crypto";

/** A short lowercase hex digest: DNS-safe and stable for the same parts. */
export function shortHash(parts: readonly string[], length = 6): string {
  const digest = createHash("sha256");
  for (const part of parts) digest.update(part).update("\u0000");
  return digest.digest("hex").slice(0, length);
}
