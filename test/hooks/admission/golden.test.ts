// AdmissionReview golden cases through the HTTP server: test/fixtures/admission/<case>/ holds the review the
// API server sends, the objects the lookup returns (or how it fails) and the expected AdmissionReview answer.
import { expect } from "chai";
import request from "supertest";
import { makeApp } from "../../../hooks/http/app.js";
import { hookRoutes } from "../../../hooks/routes.js";
import { createLogger } from "../../../runtime/log.js";
import { expectGolden, goldenCases } from "../../support/golden.js";
import { FakeClusterLookup, type LookupFixture } from "./fake-lookup.js";

interface AdmissionCase {
  lookupTimeoutMs?: number;
  /** When set, exactly these lookups must be made (e.g. none for a metadata-only update). */
  expectedLookups?: string[];
}

describe("POST /admission/cspc golden cases", () => {
  for (const c of goldenCases("admission")) {
    it(`${c.name}: ${c.description}`, async () => {
      const meta = c.read("case.yaml") as AdmissionCase;
      const lookup = new FakeClusterLookup(c.read("lookups.yaml") as LookupFixture);
      const app = makeApp({
        routes: hookRoutes(undefined, {
          lookup: () => lookup,
          lookupTimeoutMs: meta.lookupTimeoutMs ?? 2000,
        }),
        clock: () => c.now,
        log: createLogger({ level: "silent" }),
      });
      const review = c.read("review.yaml") as { request: { uid: string } };
      const res = await request(app).post("/admission/cspc").send(review).expect(200);
      expect(res.body.response.uid, "the response echoes request.uid").to.equal(review.request.uid);
      expectGolden(c, "response.yaml", res.body);
      if (meta.expectedLookups) expect(lookup.calls).to.deep.equal(meta.expectedLookups);
    });
  }
});
