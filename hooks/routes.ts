// Every endpoint of the hook server, in one list. Each entry is a pure function behind a path.
import type { HookRoute } from "./http/app.js";
import { admitCspc, defaultAdmissionOptions, type AdmissionOptions } from "./admission/cspc.js";
import { DEFAULT_HOOK_CONFIG, type HookConfig } from "../lib/hook-config.js";
import { customizeCspc } from "./cspc-sync/customize.js";
import { syncCspcEmitting } from "./cspc-sync/sync.js";
import { syncCspi } from "./cspi-sync/sync.js";
import { finalizeCspc } from "./finalize/cspc.js";
import { finalizeCspi } from "./finalize/cspi.js";
import { finalizeCvc } from "./finalize/cvc.js";
import { customizeCv } from "./cv-status/customize.js";
import { syncCvStatus } from "./cv-status/sync.js";
import { customizeCvc } from "./cvc-sync/customize.js";
import { syncCvc } from "./cvc-sync/sync.js";
import { customizeStorageClass } from "./storageclass/customize.js";
import { syncStorageClass } from "./storageclass/sync.js";

export function hookRoutes(
  config: HookConfig = DEFAULT_HOOK_CONFIG,
  admission: AdmissionOptions = defaultAdmissionOptions(),
): HookRoute[] {
  return [
    { path: "/hooks/cspc-customize", name: "cspc-customize", handle: (body) => customizeCspc(body) },
    { path: "/hooks/cspc-sync", name: "cspc-sync", handle: syncCspcEmitting },
    {
      path: "/hooks/cspc-finalize",
      name: "cspc-finalize",
      handle: (body, ctx) => finalizeCspc(body, ctx.clock, config),
    },
    { path: "/hooks/cspi-sync", name: "cspi-sync", handle: (body, ctx) => syncCspi(body, ctx.clock, config) },
    {
      path: "/hooks/cspi-finalize",
      name: "cspi-finalize",
      handle: (body, ctx) => finalizeCspi(body, ctx.clock, config),
    },
    { path: "/hooks/cvc-customize", name: "cvc-customize", handle: (body) => customizeCvc(body) },
    { path: "/hooks/cvc-sync", name: "cvc-sync", handle: (body, ctx) => syncCvc(body, ctx.clock, config) },
    {
      path: "/hooks/cvc-finalize",
      name: "cvc-finalize",
      handle: (body, ctx) => finalizeCvc(body, ctx.clock),
    },
    { path: "/hooks/cv-customize", name: "cv-customize", handle: (body) => customizeCv(body) },
    { path: "/hooks/cv-status", name: "cv-status", handle: (body, ctx) => syncCvStatus(body, ctx.clock) },
    {
      path: "/hooks/storageclass-customize",
      name: "storageclass-customize",
      handle: (body) => customizeStorageClass(body),
    },
    {
      path: "/hooks/storageclass-sync",
      name: "storageclass-sync",
      handle: (body, ctx) => syncStorageClass(body, ctx.clock),
    },
    {
      path: "/hooks/storageclass-finalize",
      name: "storageclass-finalize",
      handle: (body, ctx) => syncStorageClass(body, ctx.clock),
    },
    {
      path: "/admission/cspc",
      name: "admission-cspc",
      handle: (body, ctx) => admitCspc(body, admission, ctx.log),
    },
  ];
}
