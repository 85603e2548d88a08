// What a failure becomes on the wire: the status code, the log line and a message the client can act on.
// A hook's own failure is a 400 (the request is wrong) or a 500 (a bug); a body refused before any hook ran
// keeps body-parser's or admission's status.
import type { ErrorRequestHandler, Response } from "express";
import { BadRequestError } from "../../lib/errors.js";
import type { Logger } from "../../runtime/log.js";
import { ADMISSION_ERROR, RETRY_AFTER_SECONDS } from "./body-admission.js";
import type { CloseIfDraining } from "./probes.js";

const MAX_ERROR_MESSAGE = 2048;

/** Logs what a hook threw and answers it; returns the status code sent. */
export function answerHookError(res: Response, error: unknown, hook: string, log: Logger): number {
  const code = error instanceof BadRequestError ? 400 : 500;
  const message = error instanceof Error ? error.message : String(error);
  if (code === 500) log.error("hook failed", { error: message, stack: (error as Error)?.stack });
  else log.warn("bad hook request", { error: brief(message) });
  res.status(code).json({ error: brief(code === 400 ? message : `internal error in ${hook}: ${message}`) });
  return code;
}

/**
 * Body-parser and admission failures carry a status and a type; nothing else reaches here because routes
 * catch their own.
 */
export function bodyErrorHandler(options: {
  log: Logger;
  /** The body limit as configured, for messages. */
  bodyLimit: string;
  closeIfDraining: CloseIfDraining;
}): ErrorRequestHandler {
  return (err: Error & { status?: number; type?: string }, req, res, _next) => {
    const status = err.status && err.status >= 400 && err.status < 500 ? err.status : 500;
    const log = options.log.child({ requestId: res.locals.requestId, path: req.path.slice(0, 200) });
    options.closeIfDraining(res);
    if (err.type === ADMISSION_ERROR.busy) {
      log.warn("busy", { code: 503, error: err.message });
      res.setHeader("Retry-After", String(RETRY_AFTER_SECONDS));
      // The body may not have been read: the connection cannot carry another request.
      res.setHeader("Connection", "close");
      res.status(503).json({ error: err.message });
      return;
    }
    if (status === 500) log.error("request failed", { error: brief(err.message), stack: err.stack });
    else log.warn("bad request", { code: status, error: brief(err.message) });
    const refusal = bodyRefusal(err, status, options.bodyLimit);
    res.status(refusal.status).json({ error: refusal.error });
  };
}

function bodyRefusal(
  err: Error & { type?: string },
  status: number,
  bodyLimit: string,
): { status: number; error: string } {
  switch (err.type) {
    case ADMISSION_ERROR.tooLarge:
      return { status: 413, error: err.message };
    case "entity.too.large":
      return {
        status: 413,
        error: `request body is larger than the ${bodyLimit} limit; raise BODY_LIMIT on the hook server`,
      };
    case "entity.parse.failed":
      return { status: 400, error: brief(`request body is not valid JSON: ${err.message}`) };
    default:
      // Anything else body-parser refuses: an unknown charset or Content-Encoding, a body that does not inflate.
      return {
        status,
        error: status === 500 ? "internal error" : brief(`request body could not be read: ${err.message}`),
      };
  }
}

/**
 * An error message quotes what the client sent, which may be megabytes; the start (what is wrong) and the end
 * (how to fix it) are kept, the middle is left out.
 */
export function brief(message: string): string {
  if (message.length <= MAX_ERROR_MESSAGE) return message;
  const keep = MAX_ERROR_MESSAGE / 2;
  return `${message.slice(0, keep)} … (${message.length - 2 * keep} characters left out) … ${message.slice(-keep)}`;
}
