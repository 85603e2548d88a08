// What a request body costs in memory once parsed, estimated from its bytes before JSON.parse sees them, and a
// budget of that cost shared by the requests in flight. A body of N bytes of Kubernetes objects becomes about
// 4N of heap; a hostile one of the same size, ten million `{}`, about 35N. Counting what JSON.parse will build
// (containers, scalars) tells the two apart in one pass over the bytes, so the server can refuse the second
// (413) or wait for room (503) instead of being killed at the pod's memory limit.

/**
 * Heap bytes per parsed value, measured on Node 20 and 24 with the hostile shapes of
 * test/reliability/hook-memory.test.ts (10 million `{}`: ~100 B each while parsing, `[]` ~65 B, a float ~32 B,
 * a short string ~28 B), rounded up.
 */
const CONTAINER_BYTES = 128;
const SCALAR_BYTES = 40;
/** The body as received, the string JSON.parse reads, and slack for the copies made on the way. */
export const RAW_COPIES = 3;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Estimated heap, in bytes, that parsing this JSON body and holding the result takes. */
export function parseCost(body: Uint8Array): number {
  let containers = 0;
  let scalars = 0;
  let inString = false;
  // A scalar starts right after one of `[`, `:` or `,` (whitespace aside): counting those starts counts numbers,
  // true, false and null without reading them.
  let afterSeparator = true;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
      continue;
    }
    if (byte === QUOTE) {
      inString = true;
      scalars++;
      afterSeparator = false;
    } else if (byte === 0x7b || byte === 0x5b) {
      containers++;
      afterSeparator = byte === 0x5b;
    } else if (byte === 0x3a || byte === 0x2c) {
      afterSeparator = true;
    } else if (byte > 0x20) {
      if (afterSeparator && byte !== 0x7d && byte !== 0x5d) scalars++;
      afterSeparator = false;
    }
  }
  return RAW_COPIES * body.length + containers * CONTAINER_BYTES + scalars * SCALAR_BYTES;
}

/** Bytes of estimated cost the requests in flight may hold together. */
export class MemoryBudget {
  private used = 0;

  constructor(readonly limit: number) {}

  /** Takes `bytes` if they fit next to what is held; false (nothing taken) when they do not. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.limit) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }

  get inUse(): number {
    return this.used;
  }
}
