// A refusal the driver answers with a gRPC status code and a message a person can act on (the spec wants
// status.message human-readable and status.details empty). Anything else a handler throws is a bug or an
// outage and is answered INTERNAL with its message.
import { status } from "@grpc/grpc-js";

export class CsiError extends Error {
  override readonly name = "CsiError";
  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
  }
}

export const invalidArgument = (message: string) => new CsiError(status.INVALID_ARGUMENT, message);
export const notFound = (message: string) => new CsiError(status.NOT_FOUND, message);
export const failedPrecondition = (message: string) => new CsiError(status.FAILED_PRECONDITION, message);
export const alreadyExists = (message: string) => new CsiError(status.ALREADY_EXISTS, message);
export const outOfRange = (message: string) => new CsiError(status.OUT_OF_RANGE, message);
export const resourceExhausted = (message: string) => new CsiError(status.RESOURCE_EXHAUSTED, message);
/** Start again: the spec's answer to a list token the plugin does not know. */
export const aborted = (message: string) => new CsiError(status.ABORTED, message);
/** Not yet: the caller retries (external-provisioner keeps retrying a volume it got this for). */
export const unavailable = (message: string) => new CsiError(status.UNAVAILABLE, message);

/** One line for any thrown value: an Error's message (and its cause's), else its text. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
}
