// Fuzzing every hook endpoint over real HTTP (an in-process server): golden requests mutated the ways a
// buggy client or a corrupted proxy would. Whatever arrives, the hook server answers; a client's mistake is
// a 400 with a message (never a 5xx, never a stack trace), and every 200 keeps the promises that protect
// data: no observed CSPI vanishes unmarked, no device leaves a pool outside a replacement, no claim of a
// pool's device is dropped.
// FUZZ_RUNS (cases per endpoint) and FUZZ_SEED reproduce or widen a run.
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { expect } from "chai";
import fc from "fast-check";
import { makeApp } from "../../hooks/http/app.js";
import { hookRoutes } from "../../hooks/routes.js";
import { TEST_HOOK_CONFIG } from "../../testkit/hook-config.js";
import { createLogger } from "../../runtime/log.js";
import { FakeClusterLookup } from "../hooks/admission/fake-lookup.js";
import { clusterObjects, loadCorpus } from "./support/corpus.js";
import {
  compositeChildrenProblems,
  customizeProblems,
  cvcFinalizeProblems,
  cvcSyncProblems,
  cvStatusProblems,
  cspiFinalizeProblems,
  cspiSyncProblems,
  finalizeCspcProblems,
  nullsIn,
} from "./support/invariants.js";
import {
  render,
  shapeKeepingMutation,
  structuralMutation,
  textMutation,
  type Json,
  type Mutation,
  type TextMutation,
} from "./support/mutate.js";
import { tally } from "./support/tally.js";

const RUNS = Number(process.env.FUZZ_RUNS ?? 1500);
const SEED = Number(process.env.FUZZ_SEED ?? 20261121);
const clock = () => new Date("2026-11-21T12:00:00Z");

type Check = (request: unknown, response: unknown) => string[];

function admissionProblems(request: unknown, response: unknown): string[] {
  const uid = (request as { request?: { uid?: unknown } }).request?.uid;
  const answer = (
    response as { response?: { uid?: unknown; allowed?: unknown; status?: { message?: unknown } } }
  ).response;
  const problems: string[] = [];
  if (answer?.uid !== uid)
    problems.push(
      `AdmissionReview answer uid ${JSON.stringify(answer?.uid)} is not the request's ${JSON.stringify(uid)}`,
    );
  if (typeof answer?.allowed !== "boolean") problems.push("AdmissionReview answer has no allowed boolean");
  if (
    answer?.allowed === false &&
    !(typeof answer.status?.message === "string" && answer.status.message !== "")
  ) {
    problems.push("a refusal without a message");
  }
  return problems;
}

/** What a 200 of each endpoint must respect. Every route the server has must be listed here. */
const CHECKS: Record<string, Check> = {
  "cspc-customize": customizeProblems,
  "cspc-sync": compositeChildrenProblems,
  "cspc-finalize": finalizeCspcProblems,
  "cspi-customize": customizeProblems,
  "cspi-sync": cspiSyncProblems,
  "cspi-finalize": cspiFinalizeProblems,
  "admission-cspc": admissionProblems,
  "cvc-customize": customizeProblems,
  "cvc-sync": cvcSyncProblems,
  "cvc-finalize": cvcFinalizeProblems,
  "cv-customize": customizeProblems,
  "cv-status": cvStatusProblems,
};

const STACK_TRACE = /\n\s+at |\.[cm]?[jt]s:\d+:\d+/;
/** An error message is for a person: it may quote the request, but a 200 kB message is an echo, not an answer. */
const MAX_ERROR_MESSAGE = 4096;

interface Outcome {
  status: number;
  text: string;
}

describe("hook endpoints under fuzzed requests (fast-check over HTTP)", function () {
  this.timeout(300_000);
  const corpus = loadCorpus();
  const errorLogs: string[] = [];
  const routes = hookRoutes(TEST_HOOK_CONFIG, {
    lookup: () => new FakeClusterLookup({ objects: clusterObjects(corpus.cspcSyncRequests) }),
  });
  let server: Server;
  let base: string;

  before(async () => {
    const log = createLogger({ level: "error", sink: (line) => errorLogs.push(line) });
    server = makeApp({ routes, clock, log }).listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  async function post(path: string, text: string): Promise<Outcome> {
    // A hang is a failure too; the limit is generous so a slow machine never trips it.
    const res = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: text,
      signal: AbortSignal.timeout(30_000),
    });
    return { status: res.status, text: await res.text() };
  }

  /** The promises every answer keeps, whatever the request. */
  function judge(routeName: string, requestText: string, outcome: Outcome): string[] {
    if (outcome.status >= 500) return [`answered ${outcome.status}: ${outcome.text.slice(0, 300)}`];
    if (STACK_TRACE.test(outcome.text))
      return [`answer carries a stack trace: ${outcome.text.slice(0, 300)}`];
    if (outcome.status === 400 || outcome.status === 413) {
      const error = (JSON.parse(outcome.text) as { error?: unknown }).error;
      if (typeof error !== "string" || error.trim() === "")
        return [`${outcome.status} without an error message`];
      if (error.length > MAX_ERROR_MESSAGE)
        return [`${outcome.status} message of ${error.length} characters echoes the request`];
      return [];
    }
    if (outcome.status !== 200) return [`answered ${outcome.status}`];
    const response = JSON.parse(outcome.text) as unknown;
    const request = JSON.parse(requestText.replace(/^\ufeff/, "")) as unknown;
    return [...nullsIn(response), ...CHECKS[routeName](request, response)];
  }

  it("has a corpus and a check for every endpoint of the hook server", () => {
    for (const route of routes) {
      expect(CHECKS, `no fuzz check for ${route.path}`).to.have.property(route.name);
      expect(
        corpus.byRoute.get(route.name),
        `no golden requests to fuzz ${route.path}`,
      ).to.have.length.greaterThan(0);
    }
  });

  it("answers every unmodified golden request with 200 and keeps the promises", async () => {
    for (const route of routes) {
      for (const seed of corpus.byRoute.get(route.name)!) {
        const text = JSON.stringify(seed);
        const outcome = await post(route.path, text);
        expect(
          judge(route.name, text, outcome),
          `${route.path}: ${outcome.text.slice(0, 300)}`,
        ).to.deep.equal([]);
        expect(outcome.status).to.equal(200);
      }
    }
  });

  for (const route of routes) {
    it(`${route.path}: ${RUNS} mutated requests, never a 5xx, a crash or a broken promise`, async () => {
      const seeds = corpus.byRoute.get(route.name) ?? [];
      const seed = fc.oneof(
        { weight: 9, arbitrary: fc.constantFrom(...seeds) },
        // Another endpoint's request here: the wrong kind must be a 400, never a half-understood 200.
        { weight: 1, arbitrary: fc.constantFrom(...corpus.all) },
      );
      const codes = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(
          seed,
          fc.array(fc.oneof(structuralMutation, shapeKeepingMutation, shapeKeepingMutation), {
            minLength: 0,
            maxLength: 4,
          }),
          // One case in six is also damaged as text; the others reach the hooks as valid JSON.
          fc.oneof({ weight: 5, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: textMutation }),
          async (original: Json, mutations: Mutation[], text: TextMutation | null) => {
            let doc = structuredClone(original);
            for (const m of mutations) doc = m.apply(doc);
            const body = text ? text.apply(render(doc)) : render(doc);
            const outcome = await post(route.path, body);
            codes.set(outcome.status, (codes.get(outcome.status) ?? 0) + 1);
            const problems = judge(route.name, body, outcome);
            const how =
              [...mutations.map((m) => m.describe), ...(text ? [text.describe] : [])].join(", ") ||
              "no mutation";
            expect(
              problems,
              `${route.path} after ${how}: ${problems.join("; ").slice(0, 2000)}`,
            ).to.deep.equal([]);
          },
        ),
        { numRuns: RUNS, seed: SEED },
      );
      tally.fuzz(route.path, RUNS, codes);
      expect(errorLogs, "error logs").to.deep.equal([]);
    });
  }
});
