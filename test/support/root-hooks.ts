// Shared test setup lives in the modules that need it (test/support/*), started lazily and stopped here.
import { stopAll } from "./processes.js";

export const mochaHooks = {
  async afterAll(): Promise<void> {
    await stopAll();
  },
};
