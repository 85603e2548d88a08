// Scheduled scrubs as the planner and the reporter decide them (docs/adr/0034-scrubs-an-interval-in-poolconfig-decided.md): pure functions of the
// CSPI, the observed pool (zpool status text through the daemon's parser) and the clock.
import { expect } from "chai";
import { ANNOTATION } from "../../api/constants.js";
import type { CSPI, CSPIStatus } from "../../api/types.js";
import { describeAction } from "../../node-daemon/executor.js";
import { parseZpoolStatus } from "../../zfs/parse.js";
import { plan, type PlanInput } from "../../node-daemon/planner.js";
import { report } from "../../node-daemon/reporter.js";
import { scrubIntervalSeconds } from "../../node-daemon/scrub.js";
import { planInputOf, plannerCase } from "../support/planner-cases.js";

/** The steady-state case's pool (now 2026-03-01T12:00:00Z) with a schedule, another scan line, state, status or annotations. */
function scrubInput(
  options: {
    interval?: string;
    scan?: string;
    state?: string;
    status?: CSPIStatus;
    annotations?: Record<string, string>;
    base?: string;
  } = {},
): PlanInput {
  const input = planInputOf(plannerCase(options.base ?? "steady-state"));
  const cspi: CSPI = structuredClone(input.cspi);
  if (options.interval)
    cspi.spec.poolConfig = { ...cspi.spec.poolConfig, scrub: { interval: options.interval } };
  if (options.status) cspi.status = { ...cspi.status, ...options.status };
  if (options.annotations) cspi.metadata.annotations = options.annotations;
  const pool = input.observation.pool!;
  let text = printed(input);
  if (options.scan) text = text.replace(/^ *(?:scrub|scan): .*$/m, options.scan);
  if (options.state)
    text = text
      .replaceAll(/ONLINE( +0 +0 +0\n\t {2}mirror)/g, `${options.state}$1`)
      .replace(" state: ONLINE", ` state: ${options.state}`);
  const status = parseZpoolStatus(text)[0];
  return {
    ...input,
    cspi,
    observation: { ...input.observation, imported: [status], pool: { ...pool, status } },
  };
}

/** The case's zpool status as zfs-fuse printed it. */
function printed(input: PlanInput): string {
  const name = input.observation.pool!.status.name;
  return `  pool: ${name}
 state: ONLINE
 scrub: none requested
config:

	NAME                           STATE     READ WRITE CKSUM
	${name}              ONLINE       0     0     0
	  mirror-0                     ONLINE       0     0     0
	    /var/openebs/sparse/disk0  ONLINE       0     0     0
	    /var/openebs/sparse/disk1  ONLINE       0     0     0

errors: No known data errors
`;
}

const scrubs = (input: PlanInput) => plan(input).actions.filter((a) => a.kind === "scrub");

describe("node-daemon scheduled scrubs: the planner", () => {
  it("reads the interval in hours or days", () => {
    expect([
      scrubIntervalSeconds("168h"),
      scrubIntervalSeconds("30d"),
      scrubIntervalSeconds("1h"),
    ]).to.deep.equal([168 * 3600, 30 * 86400, 3600]);
    expect([
      scrubIntervalSeconds("0h"),
      scrubIntervalSeconds("1w"),
      scrubIntervalSeconds("24"),
    ]).to.deep.equal([undefined, undefined, undefined]);
  });

  it("never scrubs a pool without a schedule", () => {
    expect(plan(scrubInput())).to.deep.equal({ actions: [], holds: [], statusOwner: true });
  });

  it("scrubs a pool with a schedule and no scrub known, and says so in the Event", () => {
    const planned = plan(scrubInput({ interval: "168h" }));
    expect(planned.actions).to.deep.equal([
      { kind: "scrub", key: "scrub:cstor-pool-a1b2c3", pool: "cstor-pool-a1b2c3", interval: "168h" },
    ]);
    expect(planned.scrubWaiting).to.equal(undefined);
    expect(describeAction(planned.actions[0])).to.equal(
      "started a scrub of pool cstor-pool-a1b2c3: poolConfig.scrub.interval is 168h and no scrub of the pool is known",
    );
  });

  it("is due an interval after the last scrub ended, as zpool status prints it (finished or stopped)", () => {
    const ended = (date: string) => ` scrub: scrub completed after 0h0m with 0 errors on ${date}`;
    expect(scrubs(scrubInput({ interval: "24h", scan: ended("Sat Feb 28 12:00:01 2026") }))).to.have.length(
      0,
    );
    const due = scrubs(scrubInput({ interval: "24h", scan: ended("Sat Feb 28 12:00:00 2026") }));
    expect(due).to.deep.equal([
      {
        kind: "scrub",
        key: "scrub:cstor-pool-a1b2c3",
        pool: "cstor-pool-a1b2c3",
        interval: "24h",
        lastEnd: "2026-02-28T12:00:00Z",
      },
    ]);
    // Someone stopped the last scrub an hour ago: not restarted before the interval has passed.
    expect(
      scrubs(
        scrubInput({
          interval: "1d",
          scan: " scrub: scrub stopped after 0h2m with 0 errors on Sun Mar  1 11:00:00 2026",
        }),
      ),
    ).to.have.length(0);
  });

  it("remembers the last scrub in the CSPI status when zfs-fuse forgot it (an import, a restarted zfs-fuse) or a resilver's line replaced it", () => {
    const status: CSPIStatus = {
      scrub: { state: "Finished", lastEndTime: "2026-03-01T10:00:00Z", errors: 0 },
    };
    expect(scrubs(scrubInput({ interval: "24h", status }))).to.have.length(0);
    const resilvered = " scrub: resilver completed after 0h0m with 0 errors on Sun Mar  1 11:58:40 2026";
    expect(scrubs(scrubInput({ interval: "24h", status, scan: resilvered }))).to.have.length(0);
    // The later of the two counts: an old status does not make a scrub zpool shows as recent due.
    const old: CSPIStatus = { scrub: { state: "Finished", lastEndTime: "2026-01-01T00:00:00Z" } };
    expect(
      scrubs(
        scrubInput({
          interval: "24h",
          status: old,
          scan: " scrub: scrub completed after 0h0m with 0 errors on Sun Mar  1 11:00:00 2026",
        }),
      ),
    ).to.have.length(0);
  });

  it("never starts a scrub while one runs (a restarted daemon sees it in zpool status) or is paused by hand, and says nothing is waiting", () => {
    const running = plan(
      scrubInput({ interval: "1h", scan: " scrub: scrub in progress for 0h3m, 42.17% done, 0h4m to go" }),
    );
    expect(running.actions).to.deep.equal([]);
    expect(running.scrubWaiting).to.equal(undefined);
    // OpenZFS: a scrub someone paused is theirs to resume; `zpool scrub` would resume it.
    expect(
      plan(scrubInput({ interval: "1h", scan: "  scan: scrub paused since Sun Mar  1 10:00:00 2026" }))
        .actions,
    ).to.deep.equal([]);
  });

  it("holds a due scrub during a resilver", () => {
    const resilvering = plan(
      scrubInput({ interval: "1h", scan: " scrub: resilver in progress for 0h0m, 25.00% done, 0h1m to go" }),
    );
    expect(resilvering.actions).to.deep.equal([]);
    expect(resilvering.scrubWaiting).to.equal(
      "a scrub is due (poolConfig.scrub.interval 1h) but waits: a resilver is running",
    );
  });

  it("holds a due scrub while a day-2 change is planned, held, or still reported under way", () => {
    const expanding = plan({
      ...planInputOf(plannerCase("expand-raid-group")),
      cspi: withSchedule(planInputOf(plannerCase("expand-raid-group")).cspi, "1h"),
    });
    expect(expanding.actions.map((a) => a.kind)).to.deep.equal(["add"]);
    expect(expanding.scrubWaiting).to.match(
      /^a scrub is due \(poolConfig\.scrub\.interval 1h\) but waits: the pool has changes to make or held first \(add:cstor-/,
    );
    const replacing = plan({
      ...planInputOf(plannerCase("replacement-resilvering-openzfs")),
      cspi: withSchedule(planInputOf(plannerCase("replacement-resilvering-openzfs")).cspi, "1h"),
    });
    expect(replacing.actions.filter((a) => a.kind === "scrub")).to.deep.equal([]);
    expect(replacing.scrubWaiting).to.match(/waits: the pool is DEGRADED/);
    const condition: CSPIStatus = {
      conditions: [
        {
          type: "DiskReplacement",
          status: "True",
          reason: "BlockDeviceReplacementInprogress",
          message: "Resilvering",
          lastTransitionTime: "2026-03-01T11:00:00Z",
        },
      ],
    };
    const reported = plan(scrubInput({ interval: "1h", status: condition }));
    expect(reported.actions).to.deep.equal([]);
    expect(reported.scrubWaiting).to.equal(
      "a scrub is due (poolConfig.scrub.interval 1h) but waits: condition DiskReplacement is True: a day-2 change is under way",
    );
  });

  it("holds a due scrub on a paused CSPI and on a pool that is not ONLINE", () => {
    const paused = plan(
      scrubInput({ interval: "1h", annotations: { [ANNOTATION.reconcilePaused]: "true" } }),
    );
    expect(paused.actions).to.deep.equal([]);
    expect(paused.scrubWaiting).to.equal(
      "a scrub is due (poolConfig.scrub.interval 1h) but waits: the CSPI carries openebs.io/reconcile-paused=true (copied from its CSPC): remove it from the CSPC (or from the CSPI, if set there by hand) to let scrubs run",
    );
    const degraded = plan(scrubInput({ interval: "1h", state: "DEGRADED" }));
    expect(degraded.actions).to.deep.equal([]);
    expect(degraded.scrubWaiting).to.match(/waits: the pool is DEGRADED: a pool scrubs only when ONLINE/);
  });
});

function withSchedule(cspi: CSPI, interval: string): CSPI {
  return { ...cspi, spec: { ...cspi.spec, poolConfig: { ...cspi.spec.poolConfig, scrub: { interval } } } };
}

describe("node-daemon scheduled scrubs: the status", () => {
  const now = new Date("2026-03-01T12:00:00Z");
  const statusOf = (input: PlanInput, started = false) => {
    const planned = plan(input);
    const outcomes = started
      ? [
          {
            action: {
              kind: "scrub" as const,
              key: "scrub:cstor-pool-a1b2c3",
              pool: "cstor-pool-a1b2c3",
              interval: "1h",
            },
          },
        ]
      : [];
    return report({
      cspi: input.cspi,
      nodeName: "node-a",
      now,
      observation: input.observation,
      plan: { ...planned, actions: [] },
      outcomes,
    }).scrub;
  };
  const finished = " scrub: scrub completed after 0h0m with 0 errors on Sun Mar  1 12:00:00 2026";

  it("a scrub this pass started and zfs-fuse already finished: started at the pass's clock, its end and errors from zpool", () => {
    const status = statusOf(scrubInput({ interval: "1h", scan: finished }), true);
    expect(status).to.deep.equal({
      state: "Finished",
      lastStartTime: "2026-03-01T12:00:00Z",
      lastEndTime: "2026-03-01T12:00:00Z",
      errors: 0,
    });
    // The next pass reads the same scrub: its start is carried, nothing moves.
    expect(statusOf(scrubInput({ interval: "1h", scan: finished, status: { scrub: status } }))).to.deep.equal(
      status,
    );
  });

  it("a running scrub shows its progress; once zfs-fuse forgets it (an import), the last result is carried, a scrub that vanished running is Canceled", () => {
    const running = statusOf(
      scrubInput({
        interval: "1h",
        scan: " scrub: scrub in progress for 0h1m, 42.17% done, 0h1m to go",
        status: { scrub: { state: "Scrubbing", lastStartTime: "2026-03-01T11:59:00Z" } },
      }),
    );
    expect(running).to.deep.equal({
      state: "Scrubbing",
      lastStartTime: "2026-03-01T11:59:00Z",
      progress: "42.17%",
    });
    const last: CSPIStatus["scrub"] = {
      state: "Finished",
      lastStartTime: "2026-02-20T00:00:00Z",
      lastEndTime: "2026-02-20T01:00:00Z",
      errors: 1,
      repairedBytes: 4096,
    };
    expect(statusOf(scrubInput({ interval: "30d", status: { scrub: last } }))).to.deep.equal(last);
    expect(statusOf(scrubInput({ interval: "30d", status: { scrub: running } }))).to.deep.equal({
      state: "Canceled",
      lastStartTime: "2026-03-01T11:59:00Z",
    });
  });

  it("shows why a due scrub waits, and nothing for a pool without a schedule or a scrub", () => {
    const paused = statusOf(
      scrubInput({ interval: "1h", annotations: { [ANNOTATION.reconcilePaused]: "true" } }),
    );
    expect(paused).to.deep.equal({
      waiting:
        "a scrub is due (poolConfig.scrub.interval 1h) but waits: the CSPI carries openebs.io/reconcile-paused=true (copied from its CSPC): remove it from the CSPC (or from the CSPI, if set there by hand) to let scrubs run",
    });
    expect(statusOf(scrubInput())).to.equal(undefined);
  });
});
