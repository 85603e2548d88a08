// `npm run test:e2e` runs this first: without a real Metacontroller the suite is not run, and says so with exit
// code 2, so that neither a person nor CI can take it for a pass.
import { NotConfigured, realMetacontrollerFromEnv } from "../../testkit/real-metacontroller.js";

try {
  const { bin, crds } = realMetacontrollerFromEnv();
  process.stdout.write(`real-Metacontroller suite: METACONTROLLER_BIN=${bin} METACONTROLLER_CRDS=${crds}\n`);
} catch (error) {
  if (!(error instanceof NotConfigured)) throw error;
  process.stdout.write(
    `${error.message}\n\nreal-Metacontroller suite: NOT RUN (0 passed, 0 failed, not run)\n`,
  );
  process.exit(2);
}
