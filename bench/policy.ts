// The CSPC admission policy's cost (`npm run bench -- --only=policy`; issue 33, docs/adr/0046-*.md): one CSPC
// edit on a real kube-apiserver with the default install's ValidatingAdmissionPolicy (api/policy.ts) and N
// CStorPoolInstances of that CSPC present (its params: the apiserver evaluates the policy once per CSPI), at
// N = 10, 100 and 1,000 pools. The pools and CSPIs are the shared fleet's (testkit/fleet.ts, the CSPIs as
// cspc-sync builds them), every CSPI with a replica count reported, as node daemons report it.
//
// Per size, four edits, each sent as an update (PUT, server-side dry run, so every repetition judges the same
// change) and once through `kubectl apply --server-side --dry-run=server`, as a user sends it:
//   legal    a raid group added to the middle pool (accepted)
//   illegal  a device added to each mirror group of the middle pool (refused, BlockDeviceAddedToRedundantGroup)
//   shift    the first pool removed (accepted: its replica count is known), so every other pool's index moves
//   foreign  a raid group added to a CSPC of 3 pools, the fleet's N CSPIs being foreign params to it
// The floor, in the same run: the same requests with the policy's binding removed (nothing evaluated; the
// CRD's own rules, the storage round trip, TLS and JSON stay). The apiserver's time in the policy comes from its
// apiserver_admission_controller_admission_duration_seconds{name="ValidatingAdmissionPolicy"}, its CPU from
// /proc (its own process, whatever else runs on the machine).
import { Agent, request as httpsRequest } from "node:https";
import { readdirSync, readFileSync } from "node:fs";
import { API_VERSION } from "../api/constants.js";
import type { BlockPoolSpec, KubeObject } from "../api/types.js";
import { CSPC_POLICY_NAME, cspcPolicy } from "../api/policy.js";
import { installProject, ownCluster, waitUntil, type OwnCluster } from "../testkit/kube.js";
import { createCspis, fleetObjects, type FleetObjects } from "../testkit/fleet.js";
import { sumsBy } from "./metrics-text.js";
import { cpuTimes } from "./process.js";
import { summarize } from "./stats.js";
import { num, type Table } from "./table.js";

export const POLICY_SIZES = [10, 100, 1000];
export const POLICY_QUICK_SIZES = [10, 100];
/** Issue 33: the policy's time per edit grows at most this much faster than the CSPC (1 = proportional). */
export const POLICY_GROWTH_TARGET = 1.5;

const NS = "openebs";
const CSPCS = `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters`;
const BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const FOREIGN_POOLS = 3;
/** What the node daemons report: every pool holds volumes (a CSPC that cannot be deleted). */
const REPLICAS = 2;
/** A request may take long before the change (18-22 s at 1,000 pools on the issue's cluster). */
const REQUEST_TIMEOUT_MS = 10 * 60_000;

export type PolicyEdit = "legal" | "illegal" | "shift" | "foreign";
export const POLICY_EDITS: PolicyEdit[] = ["legal", "illegal", "shift", "foreign"];

export interface EditTiming {
  /** Updates sent (PUT, dry run) and their round trip. */
  samples: number;
  p50Ms: number;
  minMs: number;
  /** The apiserver's time in the ValidatingAdmissionPolicy plugin per update (its own metric). */
  vapMs: number;
  /** The apiserver process's CPU per update. */
  cpuMs: number;
  /** `kubectl apply --server-side --dry-run=server` of the same CSPC, once. */
  kubectlMs: number;
  /** How many of the updates were refused (422 Invalid, the policy's reason); the others were let in (200). */
  refusals: number;
  /** Policy evaluations that failed and let the edit in (failurePolicy Ignore), e.g. out of cost budget. */
  policyErrors: number;
}

export interface PolicySize {
  pools: number;
  foreignCspis: number;
  /** The edited CSPC's JSON size. */
  cspcBytes: number;
  setupSeconds: number;
  policy: Record<PolicyEdit, EditTiming>;
  floor: Record<PolicyEdit, EditTiming>;
}

export interface PolicyResults {
  sizes: PolicySize[];
  apiserverVersion: string;
}

export interface PolicyOptions {
  sizes: number[];
  /** Updates per edit: at least minSamples, more while under millis. */
  budget: { millis: number; minSamples: number; maxSamples: number };
  progress: (line: string) => void;
}

type Edit = (pools: BlockPoolSpec[]) => void;
const bds = (...names: string[]) => names.map((blockDeviceName) => ({ blockDeviceName }));
const middle = (pools: BlockPoolSpec[]) => pools[Math.floor(pools.length / 2)];
/** A new mirror group in the middle pool: a legal day-2 expansion. */
const ADD_GROUP: Edit = (pools) =>
  middle(pools).raidGroups.push({ type: "mirror", blockDevices: bds("bench-new-0", "bench-new-1") });
/** The first pool removed (legal: its count is reported): every other pool's index moves down by one. */
const REMOVE_FIRST: Edit = (pools) => void pools.splice(0, 1);
/** A device added to each mirror group of the middle pool: ZFS cannot widen a mirror, the policy refuses it. */
const WIDEN_MIRRORS: Edit = (pools) =>
  middle(pools).raidGroups.forEach((g, i) => g.blockDevices.push(...bds(`bench-wide-${i}`)));

function edited(cspc: KubeObject, edit: Edit): KubeObject {
  const copy = structuredClone(cspc) as FleetObjects["cspc"];
  edit(copy.spec.pools);
  return copy;
}

/** One HTTPS client for the whole run, kept alive, so the floor is not TLS handshakes. */
class Api {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  private readonly ca: Buffer;
  constructor(private readonly cluster: OwnCluster) {
    this.ca = readFileSync(cluster.caFile);
  }

  send(method: string, path: string, body?: unknown, contentType = "application/json") {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = httpsRequest(
        new URL(path, this.cluster.server),
        {
          method,
          agent: this.agent,
          ca: this.ca,
          timeout: REQUEST_TIMEOUT_MS,
          headers: {
            Authorization: `Bearer ${this.cluster.admin.token}`,
            Accept: "application/json",
            ...(payload === undefined ? {} : { "Content-Type": contentType }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            const json = (res.headers["content-type"] ?? "").includes("json");
            resolve({ status: res.statusCode ?? 0, body: json && text ? JSON.parse(text) : text });
          });
        },
      );
      req.on("timeout", () => req.destroy(new Error(`${method} ${path} timed out`)));
      req.on("error", reject);
      req.end(payload);
    });
  }

  async must(method: string, path: string, body?: unknown, contentType?: string): Promise<any> {
    const response = await this.send(method, path, body, contentType);
    if (response.status >= 300)
      throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Creates or replaces the CSPC (the binding is off while the fleet is set up). */
async function putCspc(api: Api, cspc: KubeObject): Promise<KubeObject> {
  const current = await api.send("GET", `${CSPCS}/${cspc.metadata.name}`);
  if (current.status === 404) return api.must("POST", CSPCS, cspc);
  const replaced = {
    ...cspc,
    metadata: { ...cspc.metadata, resourceVersion: current.body.metadata.resourceVersion },
  };
  return api.must("PUT", `${CSPCS}/${cspc.metadata.name}`, replaced);
}

/** An update of the stored CSPC to `object`'s spec, judged and not stored. */
function dryRunUpdate(api: Api, object: KubeObject) {
  return api.send("PUT", `${CSPCS}/${object.metadata.name}?dryRun=All`, object);
}

async function setBinding(api: Api, on: boolean): Promise<void> {
  if (on) await api.must("POST", BINDINGS, cspcPolicy()[1]);
  else await api.must("DELETE", `${BINDINGS}/${CSPC_POLICY_NAME}`);
}

/** Waits until the apiserver enforces (or no longer enforces) the policy with every CSPI of `stored`. */
async function waitEnforced(api: Api, stored: KubeObject, enforced: boolean): Promise<void> {
  // The CSPIs were created in pool order: the last pool's refusal means the policy's informer has them all
  // (but the few created alongside it).
  const lastWidened = edited(stored, (pools) =>
    pools[pools.length - 1].raidGroups.forEach((g, i) => g.blockDevices.push(...bds(`bench-probe-${i}`))),
  );
  // Only the policy's refusal (422) or an admission (200) says which: a probe the apiserver cut off at its
  // request timeout (504) goes on failing its remaining params after it answers, so it is waited past.
  await waitUntil(
    async () => (await dryRunUpdate(api, lastWidened)).status === (enforced ? 422 : 200),
    120_000,
    () => `the policy is ${enforced ? "never" : "still"} enforced`,
  );
}

function apiserverPid(cluster: OwnCluster): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "latin1");
      if (cmdline.includes("kube-apiserver") && cmdline.includes(cluster.dir)) return Number(entry);
    } catch {
      // gone between the listing and the read
    }
  }
  throw new Error(`no kube-apiserver process with ${cluster.dir} on its command line`);
}

interface Counters {
  vapSeconds: number;
  errors: number;
  cpuMs: number;
}

async function counters(api: Api, pid: number): Promise<Counters> {
  const text = String((await api.must("GET", "/metrics")) as string);
  const vapSeconds =
    sumsBy(text, "apiserver_admission_controller_admission_duration_seconds_sum", ["name"]).get(
      "ValidatingAdmissionPolicy",
    ) ?? 0;
  // Only evaluations that denied, or that failed and were let through (failurePolicy Ignore), are counted.
  const checks = sumsBy(text, "apiserver_validating_admission_policy_check_total", ["enforcement_action"]);
  const errors = checks.get("allow") ?? 0;
  const { own } = cpuTimes(pid);
  return { vapSeconds, errors, cpuMs: own };
}

interface Measure {
  api: Api;
  cluster: OwnCluster;
  pid: number;
  budget: PolicyOptions["budget"];
}

/** `kubectl apply --server-side --dry-run=server` of `object`'s spec, as a user applies a manifest: its time. */
async function timeKubectlApply(m: Measure, object: KubeObject): Promise<number> {
  const { name, namespace } = object.metadata;
  const manifest = {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: { name, namespace },
    spec: object.spec,
  };
  const start = performance.now();
  const applied = await m.cluster.kubectl(
    ["apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-"],
    { input: JSON.stringify(manifest), allowFailure: true, timeoutMs: REQUEST_TIMEOUT_MS },
  );
  const ms = performance.now() - start;
  // Refused by the policy, or (before ADR 46, at 1,000 pools on a loaded machine) out of the request's time.
  if (applied.exitCode !== 0 && !/denied request|allotted|timeout/i.test(applied.stderr))
    throw new Error(`kubectl apply exited with ${applied.exitCode}: ${applied.stderr}`);
  return ms;
}

/** Sends the update until the budget is spent; the apiserver's counters around the updates only. */
async function timeEdit(m: Measure, object: KubeObject): Promise<EditTiming> {
  const before = await counters(m.api, m.pid);
  const times: number[] = [];
  const statuses: number[] = [];
  const until = performance.now() + m.budget.millis;
  while (
    times.length < m.budget.minSamples ||
    (times.length < m.budget.maxSamples && performance.now() < until)
  ) {
    const start = performance.now();
    statuses.push((await dryRunUpdate(m.api, object)).status);
    times.push(performance.now() - start);
  }
  const after = await counters(m.api, m.pid);
  // An update the policy did not finish judging in the apiserver's request time (60 s) is let in: its params
  // not evaluated by then fail, and the policy ignores failures. So a refusable edit may get 200 and 422.
  if (statuses.some((s) => s !== 200 && s !== 422))
    throw new Error(`the updates were answered ${statuses.join(", ")}`);
  const refusals = statuses.filter((s) => s === 422).length;
  const kubectlMs = await timeKubectlApply(m, object);
  const summary = summarize(times);
  return {
    samples: times.length,
    p50Ms: summary.p50,
    minMs: Math.min(...times),
    // Per update sent: the plugin's count also has the apiserver's own lease updates, which it does not judge.
    vapMs: ((after.vapSeconds - before.vapSeconds) * 1000) / times.length,
    cpuMs: (after.cpuMs - before.cpuMs) / times.length,
    kubectlMs,
    refusals,
    policyErrors: after.errors - before.errors,
  };
}

async function timeEdits(
  m: Measure,
  objects: Record<PolicyEdit, KubeObject>,
  label: string,
  progress: PolicyOptions["progress"],
) {
  const out = {} as Record<PolicyEdit, EditTiming>;
  for (const edit of POLICY_EDITS) {
    out[edit] = await timeEdit(m, objects[edit]);
    progress(
      `${label}, ${edit}: p50 ${num(out[edit].p50Ms)} ms, policy ${num(out[edit].vapMs)} ms (${out[edit].samples} updates)`,
    );
  }
  return out;
}

async function stored(api: Api, name: string): Promise<KubeObject> {
  return api.must("GET", `${CSPCS}/${name}`);
}

/** One size: the fleet grown to `pools` (binding off), measured with the binding on, then off (the floor). */
async function measureSize(m: Measure, pools: number, before: number, progress: PolicyOptions["progress"]) {
  const started = performance.now();
  const { cspc, cspis } = fleetObjects(pools);
  await putCspc(m.api, cspc);
  // The CSPIs of the smaller fleet are there already; the new ones are made in pool order.
  await createCspis(m.cluster, cspis.slice(before), REPLICAS);
  const fleetNow = await stored(m.api, "fleet");
  const objects: Record<PolicyEdit, KubeObject> = {
    legal: edited(fleetNow, ADD_GROUP),
    illegal: edited(fleetNow, WIDEN_MIRRORS),
    shift: edited(fleetNow, REMOVE_FIRST),
    foreign: edited(await stored(m.api, "other"), ADD_GROUP),
  };
  await setBinding(m.api, true);
  await waitEnforced(m.api, fleetNow, true);
  const setupSeconds = (performance.now() - started) / 1000;
  progress(`policy: ${pools} pools set up in ${num(setupSeconds)} s`);
  const policy = await timeEdits(m, objects, `policy, ${pools} pools`, progress);
  await setBinding(m.api, false);
  await waitEnforced(m.api, fleetNow, false);
  const floor = await timeEdits(m, objects, `floor, ${pools} pools`, progress);
  const cspcBytes = JSON.stringify(fleetNow.spec).length;
  return { pools, foreignCspis: FOREIGN_POOLS, cspcBytes, setupSeconds, policy, floor };
}

export async function runPolicy(options: PolicyOptions): Promise<PolicyResults> {
  const cluster = await ownCluster();
  const api = new Api(cluster);
  try {
    await installProject(cluster);
    const pid = apiserverPid(cluster);
    const version = await api.must("GET", "/version");
    // The set-up's own writes are not judged: the binding comes and goes with each size's measurement.
    await setBinding(api, false);
    const other = fleetObjects(FOREIGN_POOLS, "other", "other-");
    await putCspc(api, other.cspc);
    await createCspis(cluster, other.cspis, REPLICAS);
    const sizes: PolicySize[] = [];
    const measure = { api, cluster, pid, budget: options.budget };
    for (const pools of options.sizes)
      sizes.push(await measureSize(measure, pools, sizes.at(-1)?.pools ?? 0, options.progress));
    return { sizes, apiserverVersion: String(version.gitVersion) };
  } finally {
    api.close();
    await cluster.stop();
  }
}

const EDIT_LABEL: Record<PolicyEdit, string> = {
  legal: "a raid group added (legal)",
  illegal: "mirrors widened (refused)",
  shift: "the first pool removed (legal; the others' indexes move)",
  foreign: `a raid group added to a CSPC of ${FOREIGN_POOLS} pools (the fleet's CSPIs foreign)`,
};

/**
 * Issue 33's target: from the second largest size to the largest, the policy's time per edit grows at most
 * POLICY_GROWTH_TARGET times as fast as the CSPC (the smallest size is mostly fixed costs), and the illegal edit
 * is refused at every size (an error in the policy would let it in).
 */
export function policyTargets(results: PolicyResults): { target: string; measured: string; met: boolean }[] {
  const [before, last] = results.sizes.slice(-2);
  if (!before || !last) return [];
  const grows = POLICY_EDITS.filter((e) => e !== "foreign").map((edit) => {
    const ratio = last.policy[edit].vapMs / before.policy[edit].vapMs;
    const limit = (POLICY_GROWTH_TARGET * last.pools) / before.pools;
    return {
      target: `CSPC policy, ${edit} edit: time in the policy at ${last.pools} pools at most ${num(limit)}x that at ${before.pools} (proportional to the CSPC)`,
      measured: `${num(ratio)}x (${num(last.policy[edit].vapMs)} ms ÷ ${num(before.policy[edit].vapMs)} ms)`,
      met: ratio <= limit,
    };
  });
  const refused = results.sizes.filter((s) => s.policy.illegal.refusals === s.policy.illegal.samples);
  return [
    ...grows,
    {
      target: "CSPC policy: the illegal edit refused every time, at every size",
      measured: results.sizes.map((s) => `${s.pools}: ${refusedLabel(s.policy.illegal)}`).join(", "),
      met: refused.length === results.sizes.length,
    },
  ];
}

function refusedLabel(t: EditTiming): string {
  if (t.refusals === 0) return "accepted";
  return t.refusals === t.samples ? "refused" : `refused ${t.refusals} of ${t.samples}`;
}

export function policyTables(results: PolicyResults): Table[] {
  const rows = results.sizes.flatMap((s) =>
    POLICY_EDITS.map((edit) => {
      const p = s.policy[edit];
      const f = s.floor[edit];
      const outcome = `${refusedLabel(p)}${p.policyErrors ? `, ${p.policyErrors} params failed` : ""}`;
      return [
        s.pools.toLocaleString("en-US"),
        EDIT_LABEL[edit],
        outcome,
        num(p.p50Ms),
        num(f.p50Ms),
        num(p.vapMs),
        num(p.cpuMs),
        num(f.cpuMs),
        num(p.kubectlMs),
        num(f.kubectlMs),
        p.samples,
      ];
    }),
  );
  return [
    {
      title: `CSPC admission policy: one edit with the CSPC's N CSPIs (params) present (${results.apiserverVersion})`,
      headers: [
        "pools",
        "edit",
        "outcome",
        "update p50 ms",
        "floor p50 ms",
        "in the policy ms",
        "apiserver CPU ms",
        "floor CPU ms",
        "kubectl apply ms",
        "floor kubectl ms",
        "updates",
      ],
      rows,
      notes: [
        `Update: a PUT of the whole CSPC, server-side dry run; the floor: the same with the policy's binding removed. ` +
          `"In the policy": the apiserver's apiserver_admission_controller_admission_duration_seconds for the ValidatingAdmissionPolicy plugin, per update. ` +
          `Besides the fleet's CSPIs, ${FOREIGN_POOLS} CSPIs of another CSPC are params of every edit; the foreign edit's params are the fleet's.`,
      ],
    },
  ];
}
