// Every endpoint of the hook server, in one list. Each entry is a pure function behind a path.
import type { HookRoute } from "./http/app.js";
import { handleCspcAdmission, defaultAdmissionOptions, type AdmissionOptions } from "./admission/cspc.js";
import { DEFAULT_HOOK_CONFIG, type HookConfig } from "../lib/hook-config.js";
import { handleCspcCustomize } from "./cspc-sync/customize.js";
import { handleCspcSync } from "./cspc-sync/sync.js";
import { handleCspiCustomize } from "./cspi-sync/customize.js";
import { handleCspiSync } from "./cspi-sync/sync.js";
import { handleCspcFinalize } from "./finalize/cspc.js";
import { handleCspiFinalize } from "./finalize/cspi.js";
import { handleCvcFinalize } from "./finalize/cvc.js";
import { handleCvCustomize } from "./cv-status/customize.js";
import { handleCvStatus } from "./cv-status/sync.js";
import { handleCvcCustomize } from "./cvc-sync/customize.js";
import { handleCvcSync } from "./cvc-sync/sync.js";

export function hookRoutes(
  config: HookConfig = DEFAULT_HOOK_CONFIG,
  admission: AdmissionOptions = defaultAdmissionOptions(),
): HookRoute[] {
  return [
    { path: "/hooks/cspc-customize", name: "cspc-customize", handle: (body) => handleCspcCustomize(body) },
    { path: "/hooks/cspc-sync", name: "cspc-sync", handle: handleCspcSync },
    {
      path: "/hooks/cspc-finalize",
      name: "cspc-finalize",
      handle: (body, ctx) => handleCspcFinalize(body, ctx.clock, config),
    },
    { path: "/hooks/cspi-customize", name: "cspi-customize", handle: (body) => handleCspiCustomize(body) },
    {
      path: "/hooks/cspi-sync",
      name: "cspi-sync",
      handle: (body, ctx) => handleCspiSync(body, ctx.clock, config),
    },
    {
      path: "/hooks/cspi-finalize",
      name: "cspi-finalize",
      handle: (body, ctx) => handleCspiFinalize(body, ctx.clock, config),
    },
    { path: "/hooks/cvc-customize", name: "cvc-customize", handle: (body) => handleCvcCustomize(body) },
    {
      path: "/hooks/cvc-sync",
      name: "cvc-sync",
      handle: (body, ctx) => handleCvcSync(body, ctx.clock, config),
    },
    {
      path: "/hooks/cvc-finalize",
      name: "cvc-finalize",
      handle: (body, ctx) => handleCvcFinalize(body, ctx.clock),
    },
    { path: "/hooks/cv-customize", name: "cv-customize", handle: (body) => handleCvCustomize(body) },
    { path: "/hooks/cv-status", name: "cv-status", handle: (body, ctx) => handleCvStatus(body, ctx.clock) },
    {
      path: "/admission/cspc",
      name: "admission-cspc",
      handle: (body, ctx) => handleCspcAdmission(body, admission, ctx.log),
    },
  ];
}
