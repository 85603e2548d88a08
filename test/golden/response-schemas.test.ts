// Every golden answer writes objects the API server would store: the children and status in the hooks'
// responses, the node daemon's status and the CLI's rendering validate against the CRD schemas of api/
// (closed, so a misspelt or stray field fails here rather than being pruned by the API server unseen). As the
// API server does (CRD validation ratcheting, GA in Kubernetes 1.33), a hook may write back an invalid value
// exactly as it observed it, e.g. a condition an older release stored without a message.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { Ajv, type ValidateFunction } from "ajv";
import { parseAllDocuments } from "yaml";
import { BlockDeviceClaimSchema, CSPCStatusSchema, CSPISchema, CSPIStatusSchema } from "../../api/schema.js";
import {
  CVCSchema,
  CVCStatusSchema,
  CVRSchema,
  CVRStatusSchema,
  CVSchema,
  CVStatusSchema,
} from "../../api/volume-schema.js";
import { deepEqual } from "../../testkit/merge-patch.js";
import { FIXTURES, goldenCases } from "../support/golden.js";

const ajv = new Ajv({ allErrors: true, strict: false });
// metav1.Time: RFC 3339 in UTC or with an offset, as the API server writes and reads it.
ajv.addFormat(
  "date-time",
  (text: string) =>
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(text) &&
    !Number.isNaN(Date.parse(text)),
);

const CHILD_SCHEMAS: Record<string, ValidateFunction> = {
  CStorPoolInstance: ajv.compile(CSPISchema),
  BlockDeviceClaim: ajv.compile(BlockDeviceClaimSchema),
  CStorVolume: ajv.compile(CVSchema),
  CStorVolumeReplica: ajv.compile(CVRSchema),
  CStorVolumeConfig: ajv.compile(CVCSchema),
};
const cvcStatus = ajv.compile(CVCStatusSchema);
const cvStatus = ajv.compile(CVStatusSchema);
const cspcStatus = ajv.compile(CSPCStatusSchema);
const cspiStatus = ajv.compile(CSPIStatusSchema);
const cvrStatus = ajv.compile(CVRStatusSchema);

/**
 * Whether the value at `path` of what is written equals what was observed there: list items are matched by
 * their `type` (conditions are a list map keyed by type), else by position.
 */
function unchangedFromObserved(written: unknown, observed: unknown, path: string): boolean {
  let value = written;
  let before = observed;
  for (const segment of path.split("/").slice(1)) {
    if (Array.isArray(value)) {
      const item = value[Number(segment)] as { type?: unknown } | undefined;
      const keyed = item && typeof item === "object" && "type" in item;
      before = Array.isArray(before)
        ? keyed
          ? before.find((o: { type?: unknown }) => o?.type === item.type)
          : before[Number(segment)]
        : undefined;
      value = item;
    } else {
      value = (value as Record<string, unknown> | undefined)?.[segment];
      before = (before as Record<string, unknown> | undefined)?.[segment];
    }
  }
  return before !== undefined && deepEqual(value, before);
}

/** Valid, but for invalid values written back exactly as observed (`observed`: the object's stored state). */
function expectValid(validate: ValidateFunction, value: unknown, what: string, observed?: unknown): void {
  validate(value);
  const errors = (validate.errors ?? [])
    .filter((e) => !unchangedFromObserved(value, observed, e.instancePath))
    .map((e) => `${e.instancePath || "/"} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ""}`);
  expect(errors, what).to.deep.equal([]);
}

function expectValidChild(
  object: { kind?: string; metadata?: { name?: string } },
  where: string,
  observed?: unknown,
): void {
  const what = `${where}: ${object.kind}/${object.metadata?.name}`;
  const validate = CHILD_SCHEMAS[object.kind ?? ""];
  if (!validate) expect.fail(`${what}: no CRD schema for kind ${object.kind}`);
  expectValid(validate, object, what, observed);
}

describe("golden answers validate against the CRD schemas", () => {
  for (const area of ["cspc-sync", "cspc-finalize"]) {
    for (const c of goldenCases(area)) {
      it(`${area}/${c.name}: children and CSPC status`, () => {
        const request = c.read("request.yaml") as {
          parent: { status?: unknown };
          children?: Record<string, Record<string, unknown>>;
        };
        const observedChildren = new Map(
          Object.values(request.children ?? {}).flatMap((byName) => Object.entries(byName)),
        );
        const response = c.read("response.yaml") as {
          children?: { kind?: string; metadata?: { name?: string; namespace?: string } }[];
          status?: unknown;
        };
        // A device set's PVCs are built-in objects: test/integration/device-sets.test.ts creates them on a real API server.
        for (const child of (response.children ?? []).filter((ch) => ch.kind !== "PersistentVolumeClaim")) {
          expectValidChild(
            child,
            `${area}/${c.name}`,
            observedChildren.get(`${child.metadata?.namespace ?? ""}/${child.metadata?.name}`),
          );
        }
        if (response.status !== undefined)
          expectValid(cspcStatus, response.status, `${area}/${c.name} status`, request.parent.status);
      });
    }
  }

  // Services, Deployments and PodDisruptionBudgets are created on a real API server by
  // test/integration/cvc-loop.test.ts; the volume objects are checked here.
  for (const area of ["cvc-sync", "cvc-finalize"]) {
    for (const c of goldenCases(area)) {
      it(`${area}/${c.name}: volume children and CVC status`, () => {
        const request = c.read("request.yaml") as {
          parent: { status?: unknown };
          children?: Record<string, Record<string, unknown>>;
        };
        const observedChildren = new Map(
          Object.values(request.children ?? {}).flatMap((byName) => Object.entries(byName)),
        );
        const response = c.read("response.yaml") as {
          children?: { kind?: string; metadata?: { name?: string; namespace?: string } }[];
          status?: unknown;
        };
        for (const child of response.children ?? []) {
          if (child.kind !== "CStorVolume" && child.kind !== "CStorVolumeReplica") continue;
          expectValidChild(
            child,
            `${area}/${c.name}`,
            observedChildren.get(`${child.metadata?.namespace ?? ""}/${child.metadata?.name}`),
          );
        }
        expectValid(cvcStatus, response.status, `${area}/${c.name} status`, request.parent.status);
      });
    }
  }

  for (const c of goldenCases("cv-status")) {
    it(`cv-status/${c.name}: CStorVolume status`, () => {
      const response = c.read("response.yaml") as { status?: unknown; attachments?: unknown[] };
      expect(response.attachments).to.deep.equal([]);
      expectValid(cvStatus, response.status, `cv-status/${c.name} status`);
    });
  }

  // Their attachments are Deployments, which test/hooks/cspi-sync/apiserver.test.ts creates on a real API server.
  for (const area of ["cspi-sync", "cspi-finalize"]) {
    for (const c of goldenCases(area)) {
      it(`${area}/${c.name}: CSPI status`, () => {
        const request = c.read("request.yaml") as { object: { status?: unknown } };
        const response = c.read("response.yaml") as { status?: unknown };
        if (response.status !== undefined)
          expectValid(cspiStatus, response.status, `${area}/${c.name} status`, request.object.status);
      });
    }
  }

  for (const c of goldenCases("node-daemon/planner")) {
    it(`node-daemon/planner/${c.name}: the status the node daemon writes`, () => {
      expectValid(cspiStatus, c.read("status.yaml"), `${c.name}/status.yaml`);
    });
  }

  for (const c of goldenCases("node-daemon/replicas")) {
    it(`node-daemon/replicas/${c.name}: the CVR statuses the node daemon writes`, () => {
      for (const [name, status] of Object.entries(c.read("status.yaml") as Record<string, unknown>))
        expectValid(cvrStatus, status, `${c.name}/status.yaml ${name}`);
    });
  }

  // Its Deployments are checked by test/integration/render.test.ts on a real API server.
  it("render/mirror: every claim and CSPI `cstor-pool render` prints", () => {
    const documents = parseAllDocuments(
      readFileSync(join(FIXTURES, "render/mirror/expected.yaml"), "utf8"),
    ).map((d) => d.toJS());
    const ours = documents.filter((object) => object.kind !== "Deployment");
    expect(ours.map((object) => object.kind)).to.include.members(["CStorPoolInstance", "BlockDeviceClaim"]);
    for (const object of ours) expectValidChild(object, "render/mirror");
  });
});
