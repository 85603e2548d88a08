// The Identity service, the same in both modes: the driver's name and version, what the plugin offers (a
// controller service, online expansion), and Probe, which asks the mode's own readiness check.
import { CSI } from "../api/constants.js";
import type { Handlers } from "./server.js";

export interface IdentityOptions {
  version: string;
  /** Resolves when the mode can serve (the controller reaches the API); rejects with a CsiError saying why not. */
  probe: () => Promise<void>;
}

export function identityService(options: IdentityOptions): Handlers<"Identity"> {
  return {
    GetPluginInfo: async () => ({ name: CSI.driverName, vendor_version: options.version }),
    // The plugin's capabilities, not the instance's: the node's Identity says the same as the controller's.
    GetPluginCapabilities: async () => ({
      capabilities: [{ service: { type: "CONTROLLER_SERVICE" } }, { volume_expansion: { type: "ONLINE" } }],
    }),
    Probe: async () => {
      await options.probe();
      return { ready: { value: true } };
    },
  };
}
