// How the end-to-end benchmark (bench/e2e.ts) observes its cluster without loading it: its own watches of the
// objects a phase waits for, and the servers' /metrics read at the start and at the end of a phase or an idle
// window, whose counters say what each server did in between.
import { Watch } from "@kubernetes/client-node";
import { API_VERSION } from "../api/constants.js";
import { NS } from "../testkit/control-plane.js";
import type { OwnCluster } from "../testkit/kube.js";
import { growth, sumsBy } from "./metrics-text.js";

/** Work of one kind a server did during a phase: how many, and what they took (ms or bytes, as the field says). */
export interface Work {
  what: string;
  count: number;
  amount: number;
}

/** What the hook server and the apiserver did between two readings (see serverWork). */
export interface ServerWork {
  /** The hook server's answers, per hook (amount: ms; its cstor_hook_duration_seconds histogram). */
  hooks: Work[];
  /** The apiserver's requests, per verb and resource (amount: ms, 0 for WATCH). */
  apiRequests: Work[];
  /** The watch events the apiserver sent, per kind (amount: bytes). */
  watchEvents: Work[];
}

export interface Readings {
  hookServer: string;
  apiserver: string;
}

/** The apiserver's /metrics. */
export async function readApiserver(cluster: OwnCluster): Promise<string> {
  return String((await cluster.request(cluster.admin, "GET", "/metrics")).body);
}

/** The hook server's and the apiserver's /metrics, read at a phase's start and end. */
export async function readServers(hookUrl: string, cluster: OwnCluster): Promise<Readings> {
  const apiserver = await readApiserver(cluster);
  return { hookServer: await (await fetch(`${hookUrl}/metrics`)).text(), apiserver };
}

/** How many of each kind of work a server did between two readings, and what they took (ms or bytes); the largest first. */
function work(
  before: string,
  after: string,
  countMetric: string,
  amountMetric: string,
  by: string[],
  amountScale: number,
): Work[] {
  const counts = growth(sumsBy(after, countMetric, by), sumsBy(before, countMetric, by));
  const amounts = growth(sumsBy(after, amountMetric, by), sumsBy(before, amountMetric, by));
  return [...counts]
    .map(([what, count]) => ({ what: what.trim(), count, amount: (amounts.get(what) ?? 0) * amountScale }))
    .sort((a, b) => b.amount - a.amount || a.what.localeCompare(b.what));
}

/** The apiserver's requests between two readings of its /metrics, per "verb resource subresource". */
export function apiRequestWork(before: string, after: string): Work[] {
  // A WATCH's duration is its whole life, recorded when it ends: counted (watches opened), not timed.
  return work(
    before,
    after,
    "apiserver_request_total",
    "apiserver_request_duration_seconds_sum",
    ["verb", "resource", "subresource"],
    1000,
  ).map((w) => (w.what.startsWith("WATCH") ? { ...w, amount: 0 } : w));
}

export function serverWork(before: Readings, after: Readings): ServerWork {
  return {
    hooks: work(
      before.hookServer,
      after.hookServer,
      "cstor_hook_duration_seconds_count",
      "cstor_hook_duration_seconds_sum",
      ["hook"],
      1000,
    ),
    apiRequests: apiRequestWork(before.apiserver, after.apiserver),
    watchEvents: work(
      before.apiserver,
      after.apiserver,
      "apiserver_watch_events_total",
      "apiserver_watch_events_sizes_sum",
      ["kind", "resource"],
      1,
    ),
  };
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED";

/**
 * Every change of the namespace's objects of one resource (those matching `labelSelector`, if given) from a
 * watch opened now, handed to `observe` with the ms since `since()` when it arrived, until `observe` says all
 * is done: exact times, and no list every 200 ms loading the apiserver the benchmark measures.
 */
export async function watchObjects<T>(
  cluster: OwnCluster,
  resource: string,
  labelSelector: string | undefined,
  observe: (type: WatchEventType, object: T, ms: number) => boolean,
) {
  const base = `/apis/${API_VERSION}/namespaces/${NS}/${resource}`;
  const query = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : "";
  const listed = await cluster.request(cluster.admin, "GET", `${base}${query}`);
  let start = Date.now();
  let settle!: (error?: Error) => void;
  const ended = new Promise<Error | undefined>((resolve) => (settle = resolve));
  const watching = await new Watch(cluster.kubeConfig()).watch(
    base,
    { ...(labelSelector ? { labelSelector } : {}), resourceVersion: listed.body.metadata.resourceVersion },
    (type, object) => {
      if (type === "ERROR")
        settle(new Error(`the ${resource} watch failed: ${JSON.stringify(object).slice(0, 300)}`));
      else if (observe(type as WatchEventType, object as T, Date.now() - start)) settle();
    },
    (error) => settle(error ?? new Error(`the apiserver ended the ${resource} watch`)),
  );
  return {
    since(ms: number): void {
      start = ms;
    },
    async finished(limitMs: number, status: () => string): Promise<void> {
      const timer = setTimeout(
        () => settle(new Error(`not done after ${limitMs / 60_000} minutes`)),
        limitMs,
      );
      const error = await ended;
      clearTimeout(timer);
      watching.abort();
      if (error) throw new Error(`${status()}: ${error.message}`);
    },
  };
}
