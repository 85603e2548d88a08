// The part of autocannon 9's programmatic API the benchmarks use (the package ships no types).
declare module "autocannon" {
  import type { EventEmitter } from "node:events";

  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    connections?: number;
    amount?: number;
    /** Seconds before a request counts as timed out. */
    timeout?: number;
  }

  interface Result {
    errors: number;
    timeouts: number;
    non2xx: number;
    requests: { total: number };
  }

  interface Instance extends EventEmitter {
    on(
      event: "response",
      listener: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void,
    ): this;
    on(event: "reqError", listener: (error: Error) => void): this;
    stop(): void;
  }

  function autocannon(options: Options, done: (err: Error | null, result: Result) => void): Instance;
  export default autocannon;
}
