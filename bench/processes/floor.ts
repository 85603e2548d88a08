// The floor: what any express server must spend on a hook request. It parses the same body with the same
// JSON parser settings and limit as makeApp, and answers the hook's own response bytes, computed beforehand
// (FLOOR_RESPONSES/<scenario>.json). The hook server can only be slower by the work of the hook itself.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import express from "express";
import { DEFAULT_BODY_LIMIT } from "../../hooks/http/app.js";
import { reportListening } from "./listening.js";

const dir = process.env.FLOOR_RESPONSES;
if (!dir) throw new Error("FLOOR_RESPONSES must name the directory of precomputed responses: the benchmark sets it");
const responses = new Map<string, Buffer>();
for (const file of readdirSync(dir)) {
  if (file.endsWith(".json")) responses.set(file.slice(0, -".json".length), readFileSync(join(dir, file)));
}

const app = express();
app.disable("x-powered-by");
app.set("etag", false);
app.post("/floor/:scenario", express.json({ limit: DEFAULT_BODY_LIMIT, strict: true, type: () => true }), (req, res) => {
  const response = responses.get(String(req.params.scenario));
  if (!response) {
    res.status(404).json({ error: `no precomputed response for ${req.params.scenario}` });
    return;
  }
  res.status(200).type("application/json").send(response);
});
reportListening(app.listen(0, "127.0.0.1"));
