// Calls that must get through a fault: the chaos run restarts the apiserver, so any API call may fail for a
// while. Retried until a deadline; the last error is what a failure shows.
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function retrying<T>(what: string, call: () => Promise<T>, timeoutMs = 180_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`${what}: still failing after ${timeoutMs / 1000} s: ${(error as Error).message}`, {
          cause: error,
        });
      await sleep(500);
    }
  }
}
