import { expect } from "chai";
import { KIND } from "../../../api/constants.js";
import { handleCspcSync } from "../../../hooks/cspc-sync/sync.js";
import { answerCspcSync } from "../../../lib/cspc/sync.js";
import { parseCompositeRequest } from "../../../lib/request.js";
import { quietHookContext } from "../../../testkit/hook-context.js";
import type { CoreEvent, EventSubject } from "../../../lib/events/recorder.js";
import { createLogger } from "../../../runtime/log.js";
import { ownedView } from "../../../lib/cspc/build.js";
import type { KubeObject } from "../../../api/types.js";
import { canonicalize } from "../../../lib/canonical.js";
import { expectGolden, goldenCases } from "../../support/golden.js";

describe("cspc-sync golden cases", () => {
  for (const c of goldenCases("cspc-sync")) {
    it(`${c.name}: ${c.description}`, () => {
      const emitted: { subject: EventSubject; events: readonly CoreEvent[] }[] = [];
      const context = {
        clock: () => c.now,
        log: createLogger({ level: "silent" }),
        emit: (subject: EventSubject, events: readonly CoreEvent[]) => emitted.push({ subject, events }),
      };
      const response = handleCspcSync(c.read("request.yaml"), context);
      expect(response, "the hook server's answer is the pure hook's").to.deep.equal(
        answerCspcSync(parseCompositeRequest(c.read("request.yaml"), KIND.cspc), () => c.now).response,
      );
      expectGolden(c, "response.yaml", response);
      const request = c.read("request.yaml") as { parent: KubeObject };
      expect(
        emitted.map((e) => e.subject.metadata.name),
        "Events are on the CSPC",
      ).to.deep.equal([request.parent.metadata.name]);
      expectGolden(c, "events.yaml", emitted[0].events);
    });
  }

  it("fixed-point: the answer equals the observed children and the observed status", () => {
    const c = goldenCases("cspc-sync").find((x) => x.name === "fixed-point")!;
    const request = c.read("request.yaml") as {
      parent: KubeObject;
      children: Record<string, Record<string, KubeObject>>;
    };
    const response = handleCspcSync(
      request,
      quietHookContext(() => c.now),
    );
    const observed = Object.values(request.children)
      .flatMap((m) => Object.values(m))
      .map(ownedView);
    expect(canonicalize(response.children.map(ownedView))).to.have.deep.members(
      canonicalize(observed) as object[],
    );
    expect(response.children).to.have.length(observed.length);
    expect(canonicalize(response.status)).to.deep.equal(canonicalize(request.parent.status));
  });
});
