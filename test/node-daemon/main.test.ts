// The process's HTTP side: /metrics from the daemon's own registry, /healthz following the resync loop.
import { expect } from "chai";
import request from "supertest";
import { metricsServer } from "../../node-daemon/main.js";
import { createMetrics } from "../../node-daemon/metrics.js";

describe("node-daemon /metrics and /healthz", () => {
  it("serves command metrics without device paths, and health from the loop", async () => {
    const metrics = createMetrics();
    metrics.onCommand({ argv: ["nsenter", "-t", "1", "-m", "--", "zpool", "status"], durationMs: 12 });
    let healthy = true;
    const server = metricsServer(metrics, () => healthy);
    const body = (await request(server).get("/metrics").expect(200)).text;
    expect(body).to.contain(
      'cstor_node_daemon_command_duration_seconds_count{command="zpool status",outcome="ok"} 1',
    );
    await request(server).get("/healthz").expect(200);
    healthy = false;
    const stalled = await request(server).get("/healthz").expect(503);
    expect(stalled.text).to.contain("stalled");
    await request(server).get("/other").expect(404);
  });
});
