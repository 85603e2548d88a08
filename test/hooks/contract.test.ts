// Metacontroller v2 decodes hook answers strictly: an unknown or mistyped field fails the whole sync. These
// checks run over what the hook server actually answers (over HTTP, as Metacontroller receives it) to the
// request of every golden case of every Metacontroller hook.
import { expect } from "chai";
import { Registry } from "prom-client";
import request from "supertest";
import { makeApp } from "../../hooks/http/app.js";
import { hookRoutes } from "../../hooks/routes.js";
import { createLogger } from "../../runtime/log.js";
import { caseHookConfig, goldenCases, type GoldenCase } from "../support/golden.js";

const COMPOSITE_KEYS = ["children", "finalized", "resyncAfterSeconds", "status"];
const DECORATOR_KEYS = ["annotations", "attachments", "finalized", "labels", "resyncAfterSeconds", "status"];
const AREAS: Record<string, { path: string; keys: string[]; list: "children" | "attachments" }> = {
  "cspc-sync": { path: "/hooks/cspc-sync", keys: COMPOSITE_KEYS, list: "children" },
  "cspc-finalize": { path: "/hooks/cspc-finalize", keys: COMPOSITE_KEYS, list: "children" },
  "cspi-sync": { path: "/hooks/cspi-sync", keys: DECORATOR_KEYS, list: "attachments" },
  "cspi-finalize": { path: "/hooks/cspi-finalize", keys: DECORATOR_KEYS, list: "attachments" },
  "cvc-sync": { path: "/hooks/cvc-sync", keys: COMPOSITE_KEYS, list: "children" },
  "cvc-finalize": { path: "/hooks/cvc-finalize", keys: COMPOSITE_KEYS, list: "children" },
  "cv-status": { path: "/hooks/cv-status", keys: DECORATOR_KEYS, list: "attachments" },
};
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function noNulls(value: unknown, path: string): void {
  expect(value, path).to.not.equal(null);
  if (Array.isArray(value)) value.forEach((v, i) => noNulls(v, `${path}[${i}]`));
  else if (value && typeof value === "object")
    for (const [k, v] of Object.entries(value)) noNulls(v, `${path}.${k}`);
}

/** The hook server's answer to the case's request, at the case's clock. */
async function answer(path: string, c: GoldenCase): Promise<Record<string, unknown>> {
  const app = makeApp({
    routes: hookRoutes(caseHookConfig(c)),
    clock: () => c.now,
    log: createLogger({ level: "silent" }),
    registry: new Registry(),
  });
  const res = await request(app)
    .post(path)
    .send(c.read("request.yaml") as object);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  return res.body as Record<string, unknown>;
}

describe("hook answers honour the Metacontroller v2 contract", () => {
  for (const [area, contract] of Object.entries(AREAS)) {
    const cases = goldenCases(area);
    it(`${area} has golden cases to check`, () => {
      expect(cases).to.have.length.greaterThan(0);
    });
    for (const c of cases) {
      it(`${area}/${c.name}: only v2 fields, no nulls, valid names and labels`, async () => {
        const response = await answer(contract.path, c);
        expect(
          Object.keys(response).filter((k) => !contract.keys.includes(k)),
          "unknown top-level fields",
        ).to.deep.equal([]);
        noNulls(response, "response");
        const objects = (response[contract.list] ?? []) as {
          apiVersion: string;
          kind: string;
          metadata: Record<string, unknown>;
        }[];
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
        }
        if (typeof response.status !== "undefined")
          expect(response.status, "status").to.be.an("object").and.not.be.an("array");
        for (const field of ["labels", "annotations"].filter((f) => f in response)) {
          for (const [key, value] of Object.entries(response[field] as object))
            expect(value, `${field} ${key}`).to.be.a("string");
        }
        if (typeof response.resyncAfterSeconds !== "undefined")
          expect(response.resyncAfterSeconds).to.be.a("number");
        if (typeof response.finalized !== "undefined") expect(response.finalized).to.be.a("boolean");
      });
    }
  }
});
