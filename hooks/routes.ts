// Every endpoint of the hook server, in one list. Each entry is a pure function behind a path.
import type { HookRoute } from "./http/app.js";
import { customizeCspc } from "./cspc-sync/customize.js";
import { syncCspc } from "./cspc-sync/sync.js";

export function hookRoutes(): HookRoute[] {
  return [
    { path: "/hooks/cspc-customize", name: "cspc-customize", handle: (body) => customizeCspc(body) },
    { path: "/hooks/cspc-sync", name: "cspc-sync", handle: (body, ctx) => syncCspc(body, ctx.clock) },
  ];
}
