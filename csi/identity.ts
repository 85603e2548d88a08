// The Identity service, the same in both modes: the driver's name and version, what the plugin offers (a
// controller service, online expansion), and Probe, which asks the mode's own readiness check.
import type { Handlers } from "./server.js";

/** The CSIDriver's name: not upstream cStor's cstor.csi.openebs.io, so the two never claim one object. */
export const DRIVER_NAME = "cstor-pool-operator.csi.openebs.io";

export interface IdentityOptions {
  version: string;
  /** Resolves when the mode can serve (the controller reaches the API); rejects with a CsiError saying why not. */
  probe: () => Promise<void>;
}

export function identityService(options: IdentityOptions): Handlers<"Identity"> {
  return {
    GetPluginInfo: async () => ({ name: DRIVER_NAME, vendor_version: options.version }),
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
