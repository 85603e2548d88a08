// docs/validation.md lists every rule: a reason added to the rules without a line in the docs fails here, and
// so does a webhook timeout, failure policy or lookup deadline that the docs state differently.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import { DEFAULT_LOOKUP_TIMEOUT_MS } from "../../../lib/admission/lookup.js";
import { REPO_ROOT } from "../../../testkit/kube.js";

const docs = readFileSync(join(REPO_ROOT, "docs/validation.md"), "utf8");
const SOURCES = [
  ...readdirSync(join(REPO_ROOT, "lib/rules")).map((f) => join("lib/rules", f)),
  "lib/admission/judge.ts",
];

function reasonsIn(file: string): string[] {
  const text = readFileSync(join(REPO_ROOT, file), "utf8");
  const found = [
    ...text.matchAll(/(?:\badd|\breject)\(\s*"([A-Z]\w+)"/g),
    ...text.matchAll(/reason:\s*"([A-Z]\w+)"/g),
  ].map((m) => m[1]);
  return [...new Set(found)];
}

describe("docs/validation.md", () => {
  for (const file of SOURCES) {
    const reasons = reasonsIn(file).filter(
      (r) => !["Invalid", "Forbidden", "ServiceUnavailable"].includes(r),
    );
    if (reasons.length === 0) continue;
    it(`documents every rule of ${file}`, () => {
      const missing = reasons.filter((r) => !docs.includes(`\`${r}\``));
      expect(missing, "reasons without a line in docs/validation.md").to.deep.equal([]);
    });
  }

  it("states the webhook's timeout, failure policy and lookup deadline as shipped", () => {
    const webhook = parse(
      readFileSync(join(REPO_ROOT, "metacontroller/components/admission/webhook.yaml"), "utf8"),
    ).webhooks[0];
    expect(docs).to.include(`\`timeoutSeconds: ${webhook.timeoutSeconds}\``);
    expect(docs).to.include(`\`failurePolicy: ${webhook.failurePolicy}\``);
    expect(docs).to.include(`**${DEFAULT_LOOKUP_TIMEOUT_MS / 1000} s**`);
  });
});
