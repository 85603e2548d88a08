// Admission of request bodies against the memory budget (hooks/http/body-cost.ts): room is reserved before a
// body is read, checked again against what parsing it would cost, and given back when the answer is sent.
// A body that does not fit now is turned away (503, Retry-After); one that never fits is refused (413).
import express, { type NextFunction, type Request, type RequestHandler, type Response } from "express";
import { MemoryBudget, parseCost, RAW_COPIES } from "./body-cost.js";

/** Seconds a client turned away for lack of room is asked to wait: about the time one large request takes. */
export const RETRY_AFTER_SECONDS = 1;

/** The `type` of the errors admission raises, read by the error mapping (hooks/http/error-response.ts). */
export const ADMISSION_ERROR = { busy: "memory.busy", tooLarge: "memory.too.large" } as const;

export interface BodyLimits {
  /** Largest accepted body, in bytes. */
  bodyLimitBytes: number;
  /** Estimated heap the requests in flight may take together, in bytes. */
  memoryLimitBytes: number;
  /** The memory limit as configured, for messages. */
  memoryLimit: string;
}

/** The middlewares that admit a hook's body and parse it, in the order they run. */
export function bodyAdmission(limits: BodyLimits): RequestHandler[] {
  const memory = new MemoryBudget(limits.memoryLimitBytes);
  const busy = (): Error =>
    admissionError(
      503,
      ADMISSION_ERROR.busy,
      `the hook server is busy with other large requests (${limits.memoryLimit} of estimated memory in flight, MEMORY_LIMIT): retry in ${RETRY_AFTER_SECONDS} s`,
    );

  /**
   * Room for the body before it is read: its declared length (the limit when it is compressed or not declared),
   * as bytes and their copies. Released when the answer is sent or the connection goes.
   */
  const reserve = (req: Request, res: Response, next: NextFunction): void => {
    const declared = req.get("content-encoding") ? NaN : Number(req.get("content-length"));
    const held =
      RAW_COPIES *
      (Number.isInteger(declared) && declared >= 0
        ? Math.min(declared, limits.bodyLimitBytes)
        : limits.bodyLimitBytes);
    if (!memory.take(held)) {
      next(busy());
      return;
    }
    res.locals.memoryHeld = held;
    res.once("close", () => memory.give(res.locals.memoryHeld as number));
    next();
  };

  /** The body is read, not yet parsed: what parsing it would cost, against the room reserved for it. */
  const verify = (_req: Request, res: Response, body: Buffer): void => {
    const cost = parseCost(body);
    const held = res.locals.memoryHeld as number;
    if (cost > memory.limit) {
      throw admissionError(
        413,
        ADMISSION_ERROR.tooLarge,
        `request body of ${body.length} bytes would take about ${mebibytes(cost)} MiB once parsed, far more than Kubernetes objects of its size, ` +
          `and more than the ${limits.memoryLimit} the hook server gives the requests in flight (MEMORY_LIMIT)`,
      );
    }
    if (cost > held) {
      if (!memory.take(cost - held)) throw busy();
      res.locals.memoryHeld = cost;
    }
  };

  // strict: false, so that a body of JSON null or a bare value reaches the hook, which says what is wrong with it.
  const json = express.json({ limit: limits.bodyLimitBytes, strict: false, type: () => true, verify });
  return [reserve, json];
}

function admissionError(status: number, type: string, message: string): Error {
  return Object.assign(new Error(message), { status, type });
}

function mebibytes(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(0);
}
