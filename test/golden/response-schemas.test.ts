// Every golden answer writes objects the API server would store: the children and status in the hooks'
// responses, the node daemon's status and the CLI's rendering validate against the CRD schemas of api/
// (closed, so a misspelt or stray field fails here rather than being pruned by the API server unseen).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { Ajv, type ValidateFunction } from "ajv";
import { parseAllDocuments } from "yaml";
import { BlockDeviceClaimSchema, CSPCStatusSchema, CSPISchema, CSPIStatusSchema } from "../../api/schema.js";
import { FIXTURES, goldenCases } from "../support/golden.js";

const ajv = new Ajv({ allErrors: true, strict: false });
// metav1.Time: RFC 3339 in UTC or with an offset, as the API server writes and reads it.
ajv.addFormat("date-time", (text: string) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(text) && !Number.isNaN(Date.parse(text)));

const CHILD_SCHEMAS: Record<string, ValidateFunction> = {
  CStorPoolInstance: ajv.compile(CSPISchema),
  BlockDeviceClaim: ajv.compile(BlockDeviceClaimSchema),
};
const cspcStatus = ajv.compile(CSPCStatusSchema);
const cspiStatus = ajv.compile(CSPIStatusSchema);

function expectValid(validate: ValidateFunction, value: unknown, what: string): void {
  const valid = validate(value);
  const errors = (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ""}`);
  expect(errors, what).to.deep.equal([]);
  expect(valid, what).to.equal(true);
}

function expectValidChild(object: { kind?: string; metadata?: { name?: string } }, where: string): void {
  const what = `${where}: ${object.kind}/${object.metadata?.name}`;
  const validate = CHILD_SCHEMAS[object.kind ?? ""];
  if (!validate) expect.fail(`${what}: no CRD schema for kind ${object.kind}`);
  expectValid(validate, object, what);
}

describe("golden answers validate against the CRD schemas", () => {
  for (const area of ["cspc-sync", "cspc-finalize"]) {
    for (const c of goldenCases(area)) {
      it(`${area}/${c.name}: children and CSPC status`, () => {
        const response = c.read("response.yaml") as { children?: { kind?: string }[]; status?: unknown };
        for (const child of response.children ?? []) expectValidChild(child, `${area}/${c.name}`);
        if (response.status !== undefined) expectValid(cspcStatus, response.status, `${area}/${c.name} status`);
      });
    }
  }

  // Their attachments are Deployments, which test/hooks/cspi-sync/apiserver.test.ts creates on a real API server.
  for (const area of ["cspi-sync", "cspi-finalize"]) {
    for (const c of goldenCases(area)) {
      it(`${area}/${c.name}: CSPI status`, () => {
        const response = c.read("response.yaml") as { status?: unknown };
        if (response.status !== undefined) expectValid(cspiStatus, response.status, `${area}/${c.name} status`);
      });
    }
  }

  for (const c of goldenCases("node-daemon/planner")) {
    it(`node-daemon/planner/${c.name}: the status the node daemon writes`, () => {
      expectValid(cspiStatus, c.read("status.yaml"), `${c.name}/status.yaml`);
    });
  }

  // Its Deployments are checked by test/integration/render.test.ts on a real API server.
  it("render/mirror: every claim and CSPI `cstor-pool render` prints", () => {
    const documents = parseAllDocuments(readFileSync(join(FIXTURES, "render/mirror/expected.yaml"), "utf8")).map((d) => d.toJS());
    const ours = documents.filter((object) => object.kind !== "Deployment");
    expect(ours.map((object) => object.kind)).to.include.members(["CStorPoolInstance", "BlockDeviceClaim"]);
    for (const object of ours) expectValidChild(object, "render/mirror");
  });
});
