// The fixtures' edit language: RFC 7386 merge patch (its Appendix A examples), the one extension for lists
// of Kubernetes objects, and the patches the converter derives, which must rebuild their target exactly.
import { expect } from "chai";
import fc from "fast-check";
import { applyMergePatch, diffMergePatch, type PatchValue } from "../../testkit/merge-patch.js";

const node = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: { name, labels },
});
const device = (name: string, host = "node-a") => ({
  apiVersion: "openebs.io/v1alpha1",
  kind: "BlockDevice",
  metadata: { name, namespace: "openebs" },
  spec: { host },
});

describe("merge patch", () => {
  describe("RFC 7386, Appendix A", () => {
    const examples: [PatchValue, PatchValue, PatchValue][] = [
      [{ a: "b" }, { a: "c" }, { a: "c" }],
      [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
      [{ a: "b" }, { a: null }, {}],
      [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
      [{ a: ["b"] }, { a: "c" }, { a: "c" }],
      [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
      [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
      [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
      [
        ["a", "b"],
        ["c", "d"],
        ["c", "d"],
      ],
      [{ a: "b" }, ["c"], ["c"]],
      [{ a: "foo" }, null, null],
      [{ a: "foo" }, "bar", "bar"],
      [{ e: null }, { a: 1 }, { e: null, a: 1 }],
      [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
    ];
    for (const [target, patch, result] of examples) {
      it(`${JSON.stringify(target)} patched with ${JSON.stringify(patch)} is ${JSON.stringify(result)}`, () => {
        const before = structuredClone(target);
        expect(applyMergePatch(target, patch)).to.deep.equal(result);
        expect(target, "the target is not modified").to.deep.equal(before);
      });
    }

    it("except a map patched onto a list that does not hold Kubernetes objects: refused, where RFC 7386 would replace the list", () => {
      expect(() => applyMergePatch({ a: [1, 2] }, { a: { b: "c" } })).to.throw(
        "$.a[0]: a map patches only a list of Kubernetes objects (kind and metadata.name)",
      );
    });
  });

  describe("a map on a list of Kubernetes objects, keyed Kind/namespace/name", () => {
    const objects = [node("node-a"), node("node-b"), device("a1"), device("a2")];

    it("merges an entry into the object of that identity, in place", () => {
      const patched = applyMergePatch(
        { objects },
        {
          objects: {
            "BlockDevice/openebs/a1": { spec: { host: "node-b" } },
            "Node/node-b": { metadata: { labels: { zone: "z1" } } },
          },
        },
      );
      expect(patched).to.deep.equal({
        objects: [node("node-a"), node("node-b", { zone: "z1" }), device("a1", "node-b"), device("a2")],
      });
    });

    it("removes the object of a null entry", () => {
      expect(applyMergePatch(objects, { "Node/node-a": null, "BlockDevice/openebs/a2": null })).to.deep.equal(
        [node("node-b"), device("a1")],
      );
    });

    it("inserts a new object after the last of its kind, or at the end for a new kind, in the patch's order", () => {
      const claim = {
        apiVersion: "openebs.io/v1alpha1",
        kind: "BlockDeviceClaim",
        metadata: { name: "bdc-a1", namespace: "openebs" },
      };
      const patched = applyMergePatch(objects, {
        "BlockDeviceClaim/openebs/bdc-a1": claim,
        "Node/node-c": node("node-c"),
        "Node/node-0": node("node-0"),
      });
      expect(patched).to.deep.equal([
        node("node-a"),
        node("node-b"),
        node("node-c"),
        node("node-0"),
        device("a1"),
        device("a2"),
        claim,
      ]);
    });

    it("refuses to remove an object the list does not hold, or to add one under another identity", () => {
      expect(() => applyMergePatch({ objects }, { objects: { "Node/node-x": null } })).to.throw(
        "$.objects: cannot remove Node/node-x, no such object in the list",
      );
      expect(() => applyMergePatch(objects, { "Node/node-x": node("node-y") })).to.throw(
        "$: the new object under Node/node-x must be a whole object of that kind, namespace and name",
      );
    });
  });

  describe("the patch the converter derives", () => {
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        fc.string(),
        fc.integer(),
        fc.boolean(),
        tie("list"),
        tie("map"),
      ),
      list: fc.array(tie("value"), { maxLength: 3 }),
      map: fc.dictionary(fc.constantFrom("a", "b", "c", "d"), tie("value"), { maxKeys: 4 }),
    })).value as fc.Arbitrary<PatchValue>;

    it("rebuilds any document from any other (no nulls in the target), or says it cannot turn a list into a map", () => {
      fc.assert(
        fc.property(json, json, (base, target) => {
          let patch: PatchValue | undefined;
          try {
            patch = diffMergePatch(base, target);
          } catch (err) {
            expect((err as Error).message).to.equal("a merge patch cannot turn a list into a map");
            return;
          }
          expect(patch === undefined ? base : applyMergePatch(base, patch)).to.deep.equal(target);
        }),
      );
      expect(() => diffMergePatch({ a: [] }, { a: {} })).to.throw(
        "a merge patch cannot turn a list into a map",
      );
    });

    it("rebuilds a list of Kubernetes objects edited, removed, added and reordered, as a keyed patch where order allows", () => {
      const pool: PatchValue[] = [
        ...["node-a", "node-b", "node-c", "node-d"].map((name) => node(name)),
        ...["a1", "a2", "a3"].map((name) => device(name)),
      ];
      const list = fc
        .shuffledSubarray(pool)
        .chain<PatchValue[]>((items) =>
          fc.tuple(
            ...items.map((item) =>
              fc
                .boolean()
                .map((edited) =>
                  edited ? applyMergePatch(item, { metadata: { labels: { edited: "yes" } } }) : item,
                ),
            ),
          ),
        );
      fc.assert(
        fc.property(list, list, (base, target) => {
          const patch = diffMergePatch({ objects: base }, { objects: target });
          expect(
            patch === undefined ? { objects: base } : applyMergePatch({ objects: base }, patch),
          ).to.deep.equal({ objects: target });
        }),
      );
      const keyed = diffMergePatch(
        { objects: pool.slice(0, 3) },
        { objects: [...pool.slice(1, 3), node("node-e")] },
      );
      expect(keyed).to.deep.equal({ objects: { "Node/node-a": null, "Node/node-e": node("node-e") } });
    });

    it("cannot write a null", () => {
      expect(() => diffMergePatch({ a: 1 }, { a: [null] })).to.throw(
        "a merge patch cannot write null: the target holds one",
      );
    });
  });
});
