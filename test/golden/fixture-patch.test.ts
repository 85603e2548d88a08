// The converter the lead runs on a case written whole (test/fixtures/README.md): it finds the nearest world,
// writes a patch that builds exactly the document, and otherwise leaves the file as it was.
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { canonicalYaml } from "../../lib/canonical.js";
import { readCaseDocument } from "../../testkit/case-documents.js";
import { consensus, convert, makeWhole } from "../support/fixture-patch.js";
import { FIXTURES } from "../support/golden.js";

describe("fixture-patch converter", () => {
  let dir: string;
  beforeEach(() => {
    dir = join(mkdtempSync(join(tmpdir(), "fixture-patch-")), "case");
  });
  afterEach(() => rmSync(join(dir, ".."), { recursive: true, force: true }));

  it("turns a whole request into a patch of the nearest world that builds exactly the same request, and back", () => {
    cpSync(join(FIXTURES, "cspc-sync/day2-migrate"), dir, { recursive: true });
    const request = readCaseDocument(dir, "request.yaml");
    makeWhole(dir, "request.yaml");
    expect(existsSync(join(dir, "request.patch.yaml"))).to.equal(false);
    expect(readCaseDocument(dir, "request.yaml")).to.deep.equal(request);

    expect(convert(dir, "request.yaml")).to.match(
      /request\.patch\.yaml: world cspc-three-pools-online, \d+ lines \(was \d+\)$/,
    );
    expect(existsSync(join(dir, "request.yaml"))).to.equal(false);
    expect(readFileSync(join(dir, "request.patch.yaml"), "utf8")).to.equal(
      readFileSync(join(FIXTURES, "cspc-sync/day2-migrate/request.patch.yaml"), "utf8"),
    );
    expect(readCaseDocument(dir, "request.yaml")).to.deep.equal(request);
  });

  it("leaves a document whole when no patch of any world can build it (a null in it)", () => {
    cpSync(join(FIXTURES, "cspi-sync/node-daemon-stale"), dir, { recursive: true });
    makeWhole(dir, "request.yaml");
    const withNull = readFileSync(join(dir, "request.yaml"), "utf8").replace(
      /^finalizing: false$/m,
      "finalizing: null",
    );
    writeFileSync(join(dir, "request.yaml"), withNull);
    expect(() => convert(dir, "request.yaml")).to.throw("no world can build it (it holds a null");
    expect(readFileSync(join(dir, "request.yaml"), "utf8")).to.equal(withNull);
    expect(existsSync(join(dir, "request.patch.yaml"))).to.equal(false);
  });

  it("makes a world of what most cases agree on: each key, each object of a list, each value", () => {
    const node = (name: string, zone: string) => ({ kind: "Node", metadata: { name, labels: { zone } } });
    const world = consensus([
      { objects: [node("a", "z1"), node("b", "z1")], paused: true, only: 1 },
      { objects: [node("a", "z1"), node("b", "z2"), node("c", "z1")], paused: false },
      { objects: [node("a", "z2"), node("b", "z2")], paused: false },
    ]);
    expect(canonicalYaml(world)).to.equal(
      canonicalYaml({ objects: [node("a", "z1"), node("b", "z2")], paused: false }),
    );
  });
});
