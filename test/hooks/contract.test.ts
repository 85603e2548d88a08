// Metacontroller v2 decodes hook answers strictly: an unknown or mistyped field fails the whole sync. These
// checks run over every golden answer of every hook.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { FIXTURES, goldenCases } from "../support/golden.js";

const COMPOSITE_KEYS = ["children", "finalized", "resyncAfterSeconds", "status"];
const DECORATOR_KEYS = ["annotations", "attachments", "finalized", "labels", "resyncAfterSeconds", "status"];
const AREAS: Record<string, { keys: string[]; list: "children" | "attachments" }> = {
  "cspc-sync": { keys: COMPOSITE_KEYS, list: "children" },
  "cspc-finalize": { keys: COMPOSITE_KEYS, list: "children" },
  "cspi-sync": { keys: DECORATOR_KEYS, list: "attachments" },
  "cspi-finalize": { keys: DECORATOR_KEYS, list: "attachments" },
};
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function noNulls(value: unknown, path: string): void {
  expect(value, path).to.not.equal(null);
  if (Array.isArray(value)) value.forEach((v, i) => noNulls(v, `${path}[${i}]`));
  else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) noNulls(v, `${path}.${k}`);
}

describe("hook answers honour the Metacontroller v2 contract", () => {
  for (const [area, contract] of Object.entries(AREAS)) {
    if (!existsSync(join(FIXTURES, area)) || readdirSync(join(FIXTURES, area)).length === 0) continue;
    for (const c of goldenCases(area)) {
      if (!c.has("response.yaml")) continue;
      it(`${area}/${c.name}: only v2 fields, no nulls, valid names and labels`, () => {
        const response = c.read("response.yaml") as Record<string, unknown>;
        expect(Object.keys(response).filter((k) => !contract.keys.includes(k)), "unknown top-level fields").to.deep.equal([]);
        const objects = (response[contract.list] ?? []) as { apiVersion: string; kind: string; metadata: Record<string, unknown> }[];
        expect(objects, contract.list).to.be.an("array");
        for (const obj of objects) {
          const where = `${obj.kind}/${String(obj.metadata?.name)}`;
          expect(obj.apiVersion, where).to.be.a("string");
          expect(obj.kind, where).to.be.a("string");
          expect(String(obj.metadata.name), where).to.match(DNS_SUBDOMAIN);
          for (const [key, value] of Object.entries((obj.metadata.labels ?? {}) as Record<string, string>)) {
            expect(value, `${where} label ${key}`).to.match(LABEL_VALUE);
            expect(value.length, `${where} label ${key}`).to.be.at.most(63);
          }
          noNulls(obj, where);
        }
        if (typeof response.resyncAfterSeconds !== "undefined") expect(response.resyncAfterSeconds).to.be.a("number");
        if (typeof response.finalized !== "undefined") expect(response.finalized).to.be.a("boolean");
      });
    }
  }
});
