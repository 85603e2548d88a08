// Shared test setup lives in the modules that need it (test/support/*), started lazily and stopped here.
import { stopAll } from "../../testkit/processes.js";

export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    // kube-apiserver and etcd get 10 s each to stop before SIGKILL (testkit/kube.ts), then the installed
    // package's directory is removed: more than mocha's default 20 s on a loaded machine.
    this.timeout(90_000);
    await stopAll();
  },
};
