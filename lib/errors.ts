/** The caller sent something we cannot act on. Mapped to HTTP 400 with the message; nothing changes. */
export class BadRequestError extends Error {
  override readonly name = "BadRequestError";
}
