// How a node operation fails: with the CSI status code the gRPC service answers (the CSI spec's error tables,
// by name: the service maps a name to its number) and a message that names the volume, the path and the fix.
import { CommandError } from "../../process/runner.js";

export type CsiCode =
  | "INVALID_ARGUMENT"
  | "NOT_FOUND"
  | "ALREADY_EXISTS"
  | "FAILED_PRECONDITION"
  | "UNAUTHENTICATED"
  | "UNAVAILABLE"
  | "INTERNAL";

export class NodeOperationError extends Error {
  override readonly name = "NodeOperationError";

  constructor(
    readonly code: CsiCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A command's failure as an INTERNAL error that says what it was doing: `doing` is "volume v: mounting …". */
export function commandFailed(doing: string, error: unknown): NodeOperationError {
  const said = error instanceof CommandError || error instanceof Error ? error.message : String(error);
  return new NodeOperationError("INTERNAL", `${doing}: ${said}`, { cause: error });
}
