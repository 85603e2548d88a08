// The floor: what any express server must spend on a hook request. It parses the same body with the same
// JSON parser settings and limit as makeApp, and answers the hook's own response bytes, computed beforehand
// (FLOOR_RESPONSES/<scenario>.json). The hook server can only be slower by the work of the hook itself.
// The admission webhook's floor also reads the cluster as its lookups must (the Kubernetes client parses every
// list it asks for, BENCH_ADMISSION_FACTS): those answers are the webhook's input as much as the review is.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import express from "express";
import { DEFAULT_BODY_LIMIT } from "../../hooks/http/app.js";
import { FleetLookup } from "./fleet-lookup.js";
import { reportListening } from "./listening.js";

const dir = process.env.FLOOR_RESPONSES;
if (!dir)
  throw new Error("FLOOR_RESPONSES must name the directory of precomputed responses: the benchmark sets it");
const responses = new Map<string, Buffer>();
const factsFile = process.env.BENCH_ADMISSION_FACTS;
if (!factsFile)
  throw new Error("BENCH_ADMISSION_FACTS must name the cluster facts file: the benchmark writes it");
const lookup = new FleetLookup(JSON.parse(readFileSync(factsFile, "utf8")));

for (const file of readdirSync(dir)) {
  if (file.endsWith(".json")) responses.set(file.slice(0, -".json".length), readFileSync(join(dir, file)));
}

const app = express();
app.disable("x-powered-by");
app.set("etag", false);
app.post(
  "/floor/:scenario",
  express.json({ limit: DEFAULT_BODY_LIMIT, strict: true, type: () => true }),
  async (req, res) => {
    const scenario = String(req.params.scenario);
    const response = responses.get(scenario);
    if (!response) {
      res.status(404).json({ error: `no precomputed response for ${req.params.scenario}` });
      return;
    }
    if (scenario.startsWith("admission")) {
      await Promise.all([
        lookup.blockDevices(),
        lookup.blockDeviceClaims(),
        lookup.nodes(),
        lookup.poolInstances(),
        lookup.volumeReplicas(),
      ]);
    }
    res.status(200).type("application/json").send(response);
  },
);
reportListening(app.listen(0, "127.0.0.1"));
