import { expect } from "chai";
import { parseQuantity } from "../../lib/quantity.js";

// What kube-apiserver v1.34.4 stores for each spelling in a container's resources (checked by creating
// objects on a real API server; test/hooks/cspi-sync/apiserver.test.ts repeats the check for the Deployment).
const STORED: [string | number, string][] = [
  ["1000m", "1"],
  ["1500m", "1500m"],
  ["0.5", "500m"],
  [0.5, "500m"],
  [2, "2"],
  ["1.0", "1"],
  ["1.500", "1500m"],
  ["2048Mi", "2Gi"],
  ["1.5Gi", "1536Mi"],
  ["2.5Gi", "2560Mi"],
  ["1024Ki", "1Mi"],
  ["1024Pi", "1Ei"],
  ["1025Ki", "1025Ki"],
  ["0.5Ki", "512"],
  ["0.1Gi", "107374182400m"],
  ["0.001Ki", "1024m"],
  ["1.5G", "1500M"],
  ["4096M", "4096M"],
  ["1e3", "1e3"],
  ["12e2", "1200"],
  ["1e-3", "1e-3"],
  ["17e-4", "2e-3"],
  ["100n", "1m"],
  ["1234567n", "2m"],
  ["0.0000000001", "1m"],
  ["1000u", "1m"],
  ["+5", "5"],
  ["0", "0"],
];

describe("resource quantities as the API server stores them", () => {
  for (const [input, stored] of STORED) {
    it(`${JSON.stringify(input)} is written ${stored}`, () => {
      expect(parseQuantity(input)?.canonical).to.equal(stored);
      // The written form is a fixed point: writing it again stores it unchanged.
      expect(parseQuantity(stored)?.canonical).to.equal(stored);
    });
  }

  it("compares values across suffixes", () => {
    expect(parseQuantity("1Gi")!.nano > parseQuantity("1G")!.nano).to.equal(true);
    expect(parseQuantity("1000m")!.nano).to.equal(parseQuantity(1)!.nano);
  });

  it("refuses what is not a non-negative quantity", () => {
    for (const bad of ["", "lots", "-1", "1Gb", "1 Gi", "Gi", "1e", "--1", Number.NaN, -2]) {
      expect(parseQuantity(bad), JSON.stringify(bad)).to.equal(undefined);
    }
  });
});
