// The idle-cost benchmark's arithmetic (bench/e2e-idle.ts): rates per minute from the counts of a window, the
// apiserver's own writes subtracted, the daemons' counter preferred to the apiserver's estimate, and the
// growth targets judged as their comments say. No cluster: the windows are written out here.
import { expect } from "chai";
import type { Baseline, IdleRun, IdleWindow } from "../../bench/e2e-idle.js";
import { growthTarget, idleSummary, idleTargets, idleTables } from "../../bench/e2e-idle.js";

const cpu = { byKind: {}, machineMs: 0 };
/** 12 writes a minute by the fresh apiserver, measured over 60 s. */
const baseline: Baseline = {
  ms: 60_000,
  writes: [
    { what: "PUT leases", count: 6, amount: 1 },
    { what: "POST endpoints", count: 6, amount: 1 },
  ],
};

/** A 120 s window in which each of `pools` pools wrote `perPool` times and each replica `perReplica` times. */
function window(
  pools: number,
  volumes: number,
  replicas: number,
  options: { perPoolEvents: number },
): IdleWindow {
  return {
    volumes,
    replicas,
    ms: 120_000,
    writes: [
      { what: "PATCH cstorpoolinstances status", count: 4 * pools, amount: 1 },
      { what: "PUT leases", count: 12, amount: 1 },
      { what: "POST endpoints", count: 12, amount: 1 },
      ...(replicas ? [{ what: "PATCH cstorvolumereplicas status", count: 4 * replicas, amount: 1 }] : []),
    ],
    hooks: [{ what: "cspi-sync", count: 2 * pools, amount: 10 * pools }],
    apiserverEvents: [
      // Every CSPI write goes to each daemon and to Metacontroller: pools + 1 watchers.
      { kind: "CSPI", events: 4 * pools * (pools + 1), bytes: 0, watchers: pools + 1 },
      { kind: "CVR", events: 4 * replicas * (pools + 1), bytes: 0, watchers: pools + 1 },
    ],
    daemonEvents: Array.from({ length: pools }, () => ({ CSPI: 2 * options.perPoolEvents, CVR: 0 })),
    cpu,
  };
}

const run = (pools: number, windows: IdleWindow[]): IdleRun => ({
  pools,
  metacontroller: "the real Metacontroller (test)",
  baseline,
  idle: windows,
});

describe("bench: the idle-cost arithmetic", () => {
  it("gives rates per minute, the apiserver's own writes subtracted, per pool", () => {
    const s = idleSummary(run(10, []), window(10, 0, 0, { perPoolEvents: 3 }));
    expect(s.writes).to.equal(32);
    expect(s.apiserverOwnWrites).to.equal(12);
    expect(s.projectWrites).to.equal(20);
    expect(s.projectWritesPerPool).to.equal(2);
    expect(s.hookSyncs).to.deep.equal({ "cspi-sync": 10 });
    expect(s.eventsPerWatcher.CSPI).to.equal(20);
    expect(s.eventsPerDaemon).to.deep.include({ mean: 3, max: 3, unread: 0 });
  });

  it("leaves the daemons' count out where they do not export it, and counts the daemons it could not read", () => {
    const w = window(3, 0, 0, { perPoolEvents: 1 });
    expect(idleSummary(run(3, []), { ...w, daemonEvents: undefined }).eventsPerDaemon).to.equal(undefined);
    const partly = idleSummary(run(3, []), { ...w, daemonEvents: [{ CSPI: 2, CVR: 0 }, null, null] });
    expect(partly.eventsPerDaemon).to.deep.include({ mean: 1, unread: 2 });
  });

  it("judges growth as the 1-node value times 1.25 plus the allowance", () => {
    const within = growthTarget({
      what: "x",
      first: { nodes: 1, value: 4 },
      last: { nodes: 50, value: 5.9 },
      allowance: 1,
      source: "s",
    });
    expect(within.met).to.equal(true);
    expect(
      growthTarget({
        ...within,
        what: "x",
        first: { nodes: 1, value: 4 },
        last: { nodes: 50, value: 6.1 },
        allowance: 1,
        source: "s",
      }).met,
    ).to.equal(false);
  });

  it("misses the events target when every daemon is sent every pool's writes, meets it when each gets its own", () => {
    // The apiserver's estimate (no daemon counter): each daemon gets every pool's 2 writes a minute.
    const strip = (w: IdleWindow): IdleWindow => ({ ...w, daemonEvents: undefined });
    const fanOut = idleTargets([
      run(1, [strip(window(1, 0, 0, { perPoolEvents: 2 }))]),
      run(50, [strip(window(50, 0, 0, { perPoolEvents: 2 }))]),
    ]);
    expect(fanOut.map((t) => [t.target.split(":")[1].trim(), t.met])).to.deep.equal([
      ["watch events per daemon per minute", false],
      ["apiserver writes per pool per minute (the apiserver's own subtracted)", true],
    ]);
    expect(fanOut[0].measured).to.include("apiserver estimate");
    // The daemons' own counter, where each daemon is sent its own pool's events only.
    const own = idleTargets([
      run(1, [window(1, 0, 0, { perPoolEvents: 2 })]),
      run(50, [window(50, 0, 0, { perPoolEvents: 2 })]),
    ]);
    expect(own[0].met).to.equal(true);
    expect(own[0].measured).to.include("cstor_node_daemon_watch_events_total");
  });

  it("judges the volumes' writes per replica, beyond the same fleet's writes without volumes", () => {
    const targets = idleTargets([
      run(1, [window(1, 0, 0, { perPoolEvents: 2 }), window(1, 100, 100, { perPoolEvents: 2 })]),
      run(50, [window(50, 0, 0, { perPoolEvents: 2 }), window(50, 100, 300, { perPoolEvents: 2 })]),
    ]);
    const perReplica = targets.find((t) => t.target.includes("per replica"))!;
    expect(perReplica.met).to.equal(true);
    expect(perReplica.measured).to.match(/^2 at 50 nodes, 2 at 1/);
  });

  it("renders its tables for runs with and without idle windows", () => {
    expect(idleTables([{ pools: 1, metacontroller: "m" }])).to.deep.equal([]);
    const tables = idleTables([run(1, [window(1, 0, 0, { perPoolEvents: 2 })])]);
    expect(tables.map((t) => t.rows[0][0])).to.deep.equal([
      "1 node, 0 volumes",
      "1 node, 0 volumes",
      "1 node, 0 volumes",
    ]);
  });
});
