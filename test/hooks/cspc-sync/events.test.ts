// The Events cspc-sync wants on its CSPC, for what the golden cases (events.yaml) do not show: completions held
// against the status the request carries, a message too long for an Event, and no clock in any of them.
import { expect } from "chai";
import type { Condition, CSPC, CSPCStatus } from "../../../api/types.js";
import { handleCspcSync } from "../../../hooks/cspc-sync/sync.js";
import { cspcEvents } from "../../../lib/cspc/events.js";
import type { CoreEvent } from "../../../lib/events/recorder.js";
import { createLogger } from "../../../runtime/log.js";
import { goldenCases } from "../../support/golden.js";

const condition = (type: string, status: "True" | "False", reason: string, message: string): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: "2026-11-24T10:00:00Z",
});

const ready = condition(
  "Ready",
  "True",
  "AllPoolsHealthy",
  "3 of 3 pools are ONLINE with their pool pod available",
);
const notReady = condition("Ready", "False", "PoolsNotHealthy", "2 of 3 pools healthy, 3 provisioned");
const updating = condition(
  "Progressing",
  "True",
  "PoolUpdateInProgress",
  "updating: pool pools-a replaces a1 with a5",
);
const settled = condition("Progressing", "False", "NoUpdatesPending", "no disruptive change is in flight");
const rejected = condition(
  "PoolSpecRejected",
  "True",
  "ChangesRejected",
  "spec.pools[0]: block device a2 was removed; data on it would be lost: put it back",
);
const accepted = condition(
  "PoolSpecRejected",
  "False",
  "NoneRejected",
  "every change to the spec was carried into the pools",
);

function status(healthy: number, ...conditions: Condition[]): CSPCStatus {
  return { desiredInstances: 3, provisionedInstances: 3, healthyInstances: healthy, conditions };
}

function cspc(previous?: CSPCStatus): CSPC {
  return {
    apiVersion: "openebs.io/v1alpha1",
    kind: "CStorPoolCluster",
    metadata: { name: "pools", namespace: "openebs" },
    spec: { pools: [] },
    ...(previous ? { status: previous } : {}),
  };
}

const brief = (events: CoreEvent[]) => events.map((e) => `${e.type} ${e.reason}`);

describe("cspc-sync Events on the CSPC", () => {
  it("a day-2 step done and every pool back: Normal Events, once, at the change", () => {
    const before = status(2, notReady, updating, accepted);
    const after = status(3, ready, settled, accepted);
    expect(cspcEvents(cspc(before), after)).to.deep.equal([
      { type: "Normal", reason: "NoUpdatesPending", message: "no disruptive change is in flight" },
      {
        type: "Normal",
        reason: "AllPoolsHealthy",
        message: "3 of 3 pools are ONLINE with their pool pod available",
      },
    ]);
    expect(cspcEvents(cspc(after), after), "nothing changed since").to.deep.equal([]);
  });

  it("a refused edit is a Warning on every sync while it holds; fixed, a Normal Event says so", () => {
    const refused = status(3, ready, settled, rejected);
    expect(brief(cspcEvents(cspc(status(3, ready, settled, accepted)), refused))).to.deep.equal([
      "Warning ChangesRejected",
    ]);
    expect(brief(cspcEvents(cspc(refused), refused)), "still refused").to.deep.equal([
      "Warning ChangesRejected",
    ]);
    expect(brief(cspcEvents(cspc(refused), status(3, ready, settled, accepted)))).to.deep.equal([
      "Normal NoneRejected",
    ]);
  });

  it("a pool coming ONLINE before the others is a Normal Event; a healthy pool lost, a Warning naming how to find it", () => {
    expect(cspcEvents(cspc(status(1, notReady)), status(2, notReady))).to.deep.equal([
      {
        type: "Normal",
        reason: "PoolOnline",
        message: "2 of 3 pools are ONLINE with their pool pod available",
      },
    ]);
    const lost = cspcEvents(cspc(status(3, ready)), status(2, notReady));
    expect(brief(lost)).to.deep.equal(["Warning PoolsNotHealthy"]);
    expect(lost[0].message).to.equal(
      "2 of 3 pools are ONLINE with their pool pod available, 3 before: kubectl -n openebs get cspi -l openebs.io/cstor-pool-cluster=pools shows which, and each one's conditions why",
    );
  });

  it("a new CSPC's first sync: only what is True is news", () => {
    expect(cspcEvents(cspc(), status(0, notReady, settled, accepted))).to.deep.equal([]);
  });

  it("a message longer than an Event holds keeps its start and says where the rest is", () => {
    const long = condition(
      "PoolSpecRejected",
      "True",
      "ChangesRejected",
      `${"spec.pools[0]: put it back; ".repeat(60)}end`,
    );
    const [event] = cspcEvents(cspc(), status(3, ready, long));
    expect(event.message).to.have.length(1024);
    expect(event.message).to.match(
      /^spec\.pools\[0\]: put it back; .* … \(the rest: kubectl -n openebs get cspc pools -o yaml, condition PoolSpecRejected\)$/,
    );
  });

  it("hold no clock value: the same request at another time wants the same Events", () => {
    const emitted = (body: unknown, at: string) => {
      const events: CoreEvent[] = [];
      handleCspcSync(body, {
        clock: () => new Date(at),
        log: createLogger({ level: "silent" }),
        emit: (_subject, e) => events.push(...e),
      });
      return events;
    };
    for (const c of goldenCases("cspc-sync")) {
      expect(emitted(c.read("request.yaml"), "2030-01-01T00:00:00Z"), c.name).to.deep.equal(
        emitted(c.read("request.yaml"), c.now.toISOString()),
      );
    }
  });
});
