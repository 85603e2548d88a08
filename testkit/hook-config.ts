// The hook configuration tests and benchmarks run with: the defaults (what an empty environment gives) plus a
// fixed CHAP key, so volumes get their credentials and target (docs/adr/0040-the-target-agent-credentials-names-and-status.md)
// and golden answers do not change from run to run. The test installs put the same key in the Secret the
// shipped hook server Deployment reads (installProject), so in-process and real hook servers agree.
import { DEFAULT_HOOK_CONFIG, type HookConfig } from "../lib/hook-config.js";

/** 64 hex digits, as `openssl rand -hex 32` makes a key; fixed, because golden files hold what it derives. */
export const TEST_CHAP_KEY = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

export const TEST_HOOK_CONFIG: HookConfig = {
  ...DEFAULT_HOOK_CONFIG,
  volumeTarget: { ...DEFAULT_HOOK_CONFIG.volumeTarget, chapKey: TEST_CHAP_KEY },
};
