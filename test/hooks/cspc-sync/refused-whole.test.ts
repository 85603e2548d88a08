// A CSPC refused as a whole (no pools, more pools than supported) creates no children and changes none:
// per-pool refusals stay per pool, but a spec that can never be built does not get claims for the part of
// it that looks buildable. Golden case of an empty pool list with live pools: cspc-sync/refused-no-pools.
import { expect } from "chai";
import { LIMITS, TYPE_KEY } from "../../../api/constants.js";
import { quietHookContext } from "../../../testkit/hook-context.js";
import { handleCspcSync } from "../../../hooks/cspc-sync/sync.js";
import { findCondition } from "../../../lib/conditions.js";
import { fleetRequest } from "../../../testkit/fleet.js";

const clock = () => new Date("2026-11-21T10:00:00Z");

describe("cspc-sync: a CSPC refused as a whole", () => {
  it(`with more than ${LIMITS.pools} pools asks for no claim and no pool`, () => {
    const request = fleetRequest({ pools: LIMITS.pools + 1 });
    // Nothing observed yet: every child in the answer would be one the hook asks Metacontroller to create.
    request.children = { [TYPE_KEY.cspi]: {}, [TYPE_KEY.blockDeviceClaim]: {} };
    request.related[TYPE_KEY.blockDeviceClaim] = {};
    const response = handleCspcSync(request, quietHookContext(clock));
    expect(response.children.length, "children asked for").to.equal(0);
    const blocked = findCondition(
      (response.status as { conditions?: never }).conditions,
      "ProvisioningBlocked",
    );
    expect(blocked?.status).to.equal("True");
    expect(blocked?.message).to.match(
      new RegExp(
        `^spec\\.pools has ${LIMITS.pools + 1} pools; at most ${LIMITS.pools} are supported per CSPC`,
      ),
    );
  });
});
