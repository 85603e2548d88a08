// A CSI judgement that refuses throws a CsiError (csi/errors.ts); tests read its code and message.
import type { CsiError } from "../csi/errors.js";

/** The CsiError `act` throws; fails the test when it throws none. */
export function refusalOf(act: () => unknown): CsiError {
  try {
    act();
  } catch (error) {
    return error as CsiError;
  }
  throw new Error("not refused");
}
