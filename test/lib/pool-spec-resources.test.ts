import { expect } from "chai";
import { checkPoolSpec } from "../../lib/rules/pool-spec.js";
import type { PoolSpec } from "../../api/types.js";

const pool = (poolConfig: PoolSpec["poolConfig"]): PoolSpec => ({
  nodeSelector: { "kubernetes.io/hostname": "n1" },
  raidGroups: [{ type: "mirror", blockDevices: [{ blockDeviceName: "a" }, { blockDeviceName: "b" }] }],
  poolConfig,
});

describe("pool spec rules: pool pod resources", () => {
  it("accepts valid quantities with requests within limits", () => {
    expect(
      checkPoolSpec(
        pool({ resources: { requests: { memory: "1Gi", cpu: "500m" }, limits: { memory: "2Gi", cpu: 1 } } }),
        0,
      ),
    ).to.deep.equal([]);
  });

  it("refuses a value that is not a quantity, naming the field", () => {
    const [v] = checkPoolSpec(pool({ auxResources: { limits: { memory: "lots" } } }), 0);
    expect(v?.reason).to.equal("InvalidQuantity");
    expect(v?.message).to.equal(
      'spec.pools[0] (nodeSelector kubernetes.io/hostname=n1) poolConfig.auxResources.limits.memory "lots" is not a Kubernetes quantity: use e.g. 500m, 2Gi or 1',
    );
  });

  it("refuses a request above its limit, which the API server would refuse in the pool Deployment", () => {
    const [v] = checkPoolSpec(
      pool({ resources: { requests: { memory: "4Gi" }, limits: { memory: "2048Mi" } } }),
      0,
    );
    expect(v?.reason).to.equal("RequestAboveLimit");
    expect(v?.message).to.match(
      /poolConfig\.resources\.requests\.memory 4Gi is above its limit 2Gi: lower the request or raise the limit$/,
    );
  });
});
