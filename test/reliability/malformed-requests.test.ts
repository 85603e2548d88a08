// The malformed requests the fuzzer found crashing the hooks (a 500 from a TypeError deep inside), kept as
// plain regression cases: a malformed parent is a 400 that names the object and the field; a malformed child
// or related object is named in the CSPC status and left out, and the rest of the sync proceeds.
import { expect } from "chai";
import request from "supertest";
import { makeApp } from "../../hooks/http/app.js";
import { hookRoutes } from "../../hooks/routes.js";
import { TEST_HOOK_CONFIG } from "../../testkit/hook-config.js";
import { createLogger } from "../../runtime/log.js";
import { goldenCases } from "../support/golden.js";
import { FakeClusterLookup } from "../hooks/admission/fake-lookup.js";

const clock = () => new Date("2026-11-21T12:00:00Z");
type Doc = Record<string, any>;

function golden(area: string, name: string): Doc {
  const c = goldenCases(area).find((x) => x.name === name)!;
  return JSON.parse(JSON.stringify(c.read("request.yaml"))) as Doc;
}

function app() {
  const routes = hookRoutes(TEST_HOOK_CONFIG, { lookup: () => new FakeClusterLookup() });
  return makeApp({ routes, clock, log: createLogger({ level: "silent" }) });
}

function first(map: Doc, typeKey: string): Doc {
  return Object.values(map[typeKey] as Doc)[0] as Doc;
}

const CSPI = "CStorPoolInstance.openebs.io/v1alpha1";
const BDC = "BlockDeviceClaim.openebs.io/v1alpha1";
const BD = "BlockDevice.openebs.io/v1alpha1";

interface Case {
  title: string;
  path: string;
  area: string;
  fixture: string;
  breakIt(doc: Doc): void;
  says: RegExp;
}

const cases: Case[] = [
  {
    title: "an observed CSPI whose raidGroups is null (the API server never stores a null)",
    path: "/hooks/cspc-sync",
    area: "cspc-sync",
    fixture: "fixed-point",
    breakIt: (doc) => (first(doc.children, CSPI).spec.raidGroups = null),
    says: /children\["CStorPoolInstance.openebs.io\/v1alpha1"\]\["openebs\/[a-z0-9-]+"\] \(CStorPoolInstance\): spec.raidGroups must be of type array/,
  },
  {
    title: "a CSPC pool that is null",
    path: "/hooks/cspc-sync",
    area: "cspc-sync",
    fixture: "fixed-point",
    breakIt: (doc) => (doc.parent.spec.pools[0] = null),
    says: /request parent \(CStorPoolCluster\): spec.pools\[0\] must be of type object/,
  },
  {
    title: "a raid group whose blockDevices is a number",
    path: "/hooks/cspc-sync",
    area: "cspc-sync",
    fixture: "fixed-point",
    breakIt: (doc) => (doc.parent.spec.pools[0].raidGroups[0].blockDevices = 3),
    says: /spec.pools\[0\].raidGroups\[0\].blockDevices must be of type array/,
  },
  {
    title: "CSPC status conditions that are a string",
    path: "/hooks/cspc-sync",
    area: "cspc-sync",
    fixture: "fixed-point",
    breakIt: (doc) => (doc.parent.status.conditions = "Ready"),
    says: /parent \(CStorPoolCluster\): status.conditions must be of type array/,
  },
  {
    title: "a CSPI listed twice under two keys",
    path: "/hooks/cspc-sync",
    area: "cspc-sync",
    fixture: "fixed-point",
    breakIt: (doc) => (doc.children[CSPI]["openebs/copy"] = structuredClone(first(doc.children, CSPI))),
    says: /lists openebs\/[a-z0-9-]+ twice/,
  },
  {
    title: "a claim without its kind (it would be returned without one)",
    path: "/hooks/cspc-finalize",
    area: "cspc-finalize",
    fixture: "step-1-mark-pools",
    breakIt: (doc) => delete first(doc.children, BDC).kind,
    says: /is a null listed under BlockDeviceClaim/,
  },
  {
    title: "CSPI finalizers that are a string",
    path: "/hooks/cspc-finalize",
    area: "cspc-finalize",
    fixture: "step-1-mark-pools",
    breakIt: (doc) => (first(doc.children, CSPI).metadata.finalizers = "openebs.io/pool-protection"),
    says: /metadata.finalizers must be of type array/,
  },
  {
    title: "a resource request that is null",
    path: "/hooks/cspi-sync",
    area: "cspi-sync",
    fixture: "pool-config-resources-tolerations",
    breakIt: (doc) => (doc.object.spec.poolConfig.resources.requests.cpu = null),
    says: /request object \(CStorPoolInstance\): spec.poolConfig.resources.requests.cpu must be of type integer or string/,
  },
  {
    title: "tolerations that are a string",
    path: "/hooks/cspi-sync",
    area: "cspi-sync",
    fixture: "pool-config-resources-tolerations",
    breakIt: (doc) => (doc.object.spec.poolConfig.tolerations = "NoSchedule"),
    says: /spec.poolConfig.tolerations must be of type array/,
  },
  {
    title: "ownerReferences that are a number",
    path: "/hooks/cspi-sync",
    area: "cspi-sync",
    fixture: "seed-1-stripe",
    breakIt: (doc) => (doc.object.metadata.ownerReferences = 1),
    says: /metadata.ownerReferences must be of type array/,
  },
];

describe("malformed hook requests the fuzzer found crashing a hook", () => {
  for (const c of cases) {
    it(`${c.path}: ${c.title} is a 400 naming the field`, async () => {
      const doc = golden(c.area, c.fixture);
      await request(app()).post(c.path).send(doc).expect(200);
      c.breakIt(doc);
      const res = await request(app()).post(c.path).send(doc).expect(400);
      expect(res.body.error).to.match(c.says);
    });
  }

  const skipped: Case[] = [
    {
      title: "an observed CSPI whose status.capacity is a string (an older schema's)",
      path: "/hooks/cspc-sync",
      area: "cspc-sync",
      fixture: "fixed-point",
      breakIt: (doc) => (first(doc.children, CSPI).status.capacity = "19Gi"),
      says: /CStorPoolInstance openebs\/[a-z0-9-]+: status.capacity must be of type object; it is left as it is/,
    },
    {
      title: "a BlockDevice whose devlinks is a string",
      path: "/hooks/cspc-sync",
      area: "cspc-sync",
      fixture: "fixed-point",
      breakIt: (doc) => (first(doc.related, BD).spec.devlinks = "by-id"),
      says: /BlockDevice openebs\/pool-1-bd-1: spec.devlinks must be of type array; it is not used/,
    },
    {
      title: "a claim (a child and a related object at once) whose spec.blockDeviceName is a number",
      path: "/hooks/cspc-sync",
      area: "cspc-sync",
      fixture: "fixed-point",
      breakIt: (doc) => {
        const name = first(doc.children, BDC).metadata.name;
        for (const map of [doc.children, doc.related])
          Object.values(map[BDC] as Doc).find((c: Doc) => c.metadata.name === name).spec.blockDeviceName = 7;
      },
      says: /^BlockDeviceClaim openebs\/bdc-[a-z0-9-]+: spec.blockDeviceName must be of type string; it is left as it is[^;]*; until then/,
    },
  ];
  for (const c of skipped) {
    it(`${c.path}: ${c.title} is a 200 that names it in the CSPC status and sets it aside`, async () => {
      const doc = golden(c.area, c.fixture);
      c.breakIt(doc);
      const res = await request(app()).post(c.path).send(doc).expect(200);
      const condition = res.body.status.conditions.find((x: Doc) => x.type === "ObjectsUnreadable");
      expect(condition).to.include({ status: "True", reason: "ObjectsSkipped" });
      expect(condition.message).to.match(c.says);
      expect(res.body.finalized ?? false, "never finalized while a child it cannot read exists").to.equal(
        false,
      );
      if (c.says.source.startsWith("CStorPoolInstance")) {
        const broken = first(doc.children, CSPI);
        const answered = res.body.children.find(
          (x: Doc) => x.kind === "CStorPoolInstance" && x.metadata.name === broken.metadata.name,
        );
        expect(
          answered?.spec,
          "returned as observed, so Metacontroller neither changes nor deletes it",
        ).to.deep.equal(JSON.parse(JSON.stringify(broken.spec, (_k, v) => (v === null ? undefined : v))));
      }
    });
  }

  it("/admission/cspc: an object whose metadata.namespace is a list is a 400", async () => {
    const cspc = golden("cspc-sync", "fixed-point").parent;
    cspc.metadata.namespace = ["openebs"];
    const review = {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: {
        uid: "u-1",
        kind: { group: "openebs.io", version: "v1alpha1", kind: "CStorPoolCluster" },
        operation: "CREATE",
        namespace: "openebs",
        object: cspc,
      },
    };
    const res = await request(app()).post("/admission/cspc").send(review).expect(400);
    expect(res.body.error).to.equal("AdmissionReview request.object.metadata.namespace must be a string");
  });

  it("an error quoting a 200 kB value keeps its start and its end, not the whole echo", async () => {
    const doc = golden("cspi-sync", "seed-1-stripe");
    doc.object.spec.hostName = "h".repeat(200_000);
    const res = await request(app()).post("/hooks/cspi-sync").send(doc).expect(400);
    expect(res.body.error.length).to.be.below(2200);
    expect(res.body.error).to.match(/^CStorPoolInstance openebs\/\S+ spec.hostName "hhh/);
    expect(res.body.error).to.match(/characters left out/);
    expect(res.body.error).to.match(/recreate the CSPI from its CStorPoolCluster$/);
  });
});
