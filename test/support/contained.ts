import { expect } from "chai";

/**
 * Every field of `desired` has the same value in `actual` (which may hold more): what Metacontroller's
 * 3-way merge and the API server's defaulting must leave untouched.
 */
export function expectContained(desired: unknown, actual: unknown, path = ""): void {
  if (Array.isArray(desired)) {
    expect(actual, path).to.be.an("array").with.length(desired.length);
    desired.forEach((item, i) => expectContained(item, (actual as unknown[])[i], `${path}[${i}]`));
  } else if (desired && typeof desired === "object") {
    expect(actual, path).to.be.an("object");
    for (const [key, value] of Object.entries(desired))
      expectContained(value, (actual as Record<string, unknown>)[key], `${path}.${key}`);
  } else expect(actual, path).to.equal(desired);
}
