// What `cstor-pool render` prints is what the API accepts: the claims, CSPIs and Deployments pass the real
// apiserver's validation (CRD schemas, CEL, the Deployment API) in a server-side dry run.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { runRender } from "../../cli/render.js";
import { fixturePath, projectInstalled, repoPath } from "../../testkit/kube.js";

describe("integration: cstor-pool render output on a real kube-apiserver", function () {
  this.timeout(20 * 60_000);

  it("is accepted as it is by `kubectl apply --server-side --dry-run=server`", async () => {
    const cluster = await projectInstalled();
    let rendered = "";
    const code = await runRender(
      [
        "-f",
        repoPath("metacontroller/samples/cspc-mirror.yaml"),
        "--block-devices",
        fixturePath("render/mirror/blockdevices.yaml"),
        "--nodes",
        fixturePath("render/mirror/nodes.yaml"),
      ],
      {
        stdout: (text) => (rendered += text),
        stderr: () => undefined,
        readFile: (path) => readFileSync(path, "utf8"),
      },
    );
    expect(code).to.equal(0);
    const { stdout } = await cluster.kubectl(["apply", "--server-side", "--dry-run=server", "-f", "-"], {
      input: rendered,
    });
    const applied = stdout.trim().split("\n");
    expect(applied).to.have.length(12);
    expect(
      applied.every((line) => line.endsWith("serverside-applied (server dry run)")),
      stdout,
    ).to.equal(true);
  });
});
