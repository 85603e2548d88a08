import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import {
  CRD_DIR,
  POLICY_PATH,
  renderCrds,
  renderPolicy,
  renderStorageClassPolicy,
  STORAGECLASS_POLICY_PATH,
} from "../../scripts/generate-crds.js";

describe("generated CRDs", () => {
  const rendered = renderCrds();

  for (const [file, text] of Object.entries(rendered)) {
    it(`metacontroller/crds/${file} is up to date with api/schema.ts (run npm run generate)`, () => {
      expect(readFileSync(join(CRD_DIR, file), "utf8")).to.equal(text);
    });
  }

  it("metacontroller/base/cspc-policy.yaml is up to date with api/policy.ts (run npm run generate)", () => {
    expect(readFileSync(POLICY_PATH, "utf8")).to.equal(renderPolicy());
  });

  it("metacontroller/base/storageclass-policy.yaml is up to date with api/storageclass-policy.ts (run npm run generate)", () => {
    expect(readFileSync(STORAGECLASS_POLICY_PATH, "utf8")).to.equal(renderStorageClassPolicy());
  });

  it("are structural: no closed objects, no const, every object typed", () => {
    const walk = (node: unknown, path: string): void => {
      if (!node || typeof node !== "object") return;
      const n = node as Record<string, unknown>;
      expect(n.additionalProperties, `${path}.additionalProperties`).to.not.equal(false);
      expect(n, path).to.not.have.property("const");
      for (const [key, value] of Object.entries(n)) walk(value, `${path}.${key}`);
    };
    for (const [file, text] of Object.entries(rendered)) walk(parse(text), file);
  });

  it("give CSPC, CSPI and the volume objects the status subresource (Metacontroller and the node daemon write status through it)", () => {
    for (const file of [
      "cstorpoolclusters.yaml",
      "cstorpoolinstances.yaml",
      "cstorvolumeconfigs.yaml",
      "cstorvolumes.yaml",
      "cstorvolumereplicas.yaml",
      "cstorvolumesnapshots.yaml",
    ]) {
      const crd = parse(rendered[file]);
      expect(crd.spec.versions[0].subresources, file).to.deep.equal({ status: {} });
    }
  });

  it("show the printer columns users expect", () => {
    const names = (file: string): string[] =>
      parse(rendered[file])
        .spec.versions[0].additionalPrinterColumns.filter((c: { priority?: number }) => !c.priority)
        .map((c: { name: string }) => c.name.toUpperCase());
    expect(names("cstorpoolclusters.yaml")).to.deep.equal([
      "HEALTHYINSTANCES",
      "PROVISIONEDINSTANCES",
      "DESIREDINSTANCES",
      "PHASE",
      "AGE",
    ]);
    expect(names("cstorpoolinstances.yaml")).to.deep.equal([
      "HOSTNAME",
      "ALLOCATED",
      "FREE",
      "CAPACITY",
      "HEALTHYREPLICAS",
      "PROVISIONEDREPLICAS",
      "STATUS",
      "AGE",
    ]);
    expect(names("cstorvolumeconfigs.yaml")).to.deep.equal([
      "CAPACITY",
      "POOLCLUSTER",
      "REPLICAS",
      "PHASE",
      "AGE",
    ]);
    expect(names("cstorvolumes.yaml")).to.deep.equal(["CAPACITY", "PHASE", "RF", "CF", "HEALTHY", "AGE"]);
    expect(names("cstorvolumereplicas.yaml")).to.deep.equal([
      "POOL",
      "NODE",
      "ALLOCATED",
      "USED",
      "PHASE",
      "AGE",
    ]);
    expect(names("cstorvolumesnapshots.yaml")).to.deep.equal([
      "VOLUME",
      "PHASE",
      "RESTORESIZE",
      "TAKEN",
      "AGE",
    ]);
  });
});
