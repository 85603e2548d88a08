// The hook server as the benchmark runs it: the production app (makeApp + hookRoutes, the tests' configuration: defaults and a CHAP key,
// info-level JSON logs) on an ephemeral loopback port, with the benchmark's fixed clock (BENCH_NOW) so every
// request takes the steady-state path, and the admission webhook's lookups answered from the cluster facts
// in BENCH_ADMISSION_FACTS. Reports its port to the parent over IPC; exits when the parent goes.
import { readFileSync } from "node:fs";
import { TEST_HOOK_CONFIG } from "../../testkit/hook-config.js";
import { makeApp } from "../../hooks/http/app.js";
import { hookRoutes } from "../../hooks/routes.js";
import { createLogger } from "../../runtime/log.js";
import { FleetLookup } from "./fleet-lookup.js";
import { reportListening } from "./listening.js";

const now = new Date(process.env.BENCH_NOW ?? "");
if (Number.isNaN(now.getTime())) throw new Error("BENCH_NOW must be an ISO time: the benchmark sets it");

const factsFile = process.env.BENCH_ADMISSION_FACTS;
if (!factsFile)
  throw new Error("BENCH_ADMISSION_FACTS must name the cluster facts file: the benchmark writes it");
const lookup = new FleetLookup(JSON.parse(readFileSync(factsFile, "utf8")));

const app = makeApp({
  routes: hookRoutes(TEST_HOOK_CONFIG, { lookup: () => lookup }),
  clock: () => new Date(now),
  log: createLogger({ level: "info", base: { component: "hook-server" } }),
});
reportListening(app.listen(0, "127.0.0.1"));
