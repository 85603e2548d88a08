// The driver's configuration as its manifests start it (metacontroller/base/csi-node.yaml, csi-controller.yaml),
// and the errors a wrong value gives: each names the flag or variable and the fix, and the driver does not start.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { parseAllDocuments } from "yaml";
import { loadCsiConfig } from "../../csi/config.js";
import { repoPath } from "../../testkit/kube.js";
import { resolvedContainerEnv } from "../../testkit/node-daemon-process.js";

/** The driver container of the shipped workload in `file`: its args, and its env as the kubelet resolves it on node-a. */
function shipped(file: string): { args: string[]; env: Record<string, string> } {
  const workload = parseAllDocuments(readFileSync(repoPath(file), "utf8"))
    .map((doc) => doc.toJS())
    .find((o) => o?.kind === "DaemonSet" || o?.kind === "Deployment");
  const container = workload.spec.template.spec.containers.find(
    (c: { name: string }) => c.name === "csi-driver",
  );
  return {
    args: container.args,
    env: resolvedContainerEnv(workload, "node-a", {}, {}, { container: "csi-driver" }),
  };
}

describe("csi: the driver's configuration", () => {
  it("the node DaemonSet's driver runs iscsiadm in the host's network namespace, where iscsid listens", () => {
    const { args, env } = shipped("metacontroller/base/csi-node.yaml");
    const config = loadCsiConfig(args, env);
    expect(config).to.deep.include({
      mode: "node",
      endpoint: "unix:///csi/csi.sock",
      nodeName: "node-a",
      iscsiadm: ["nsenter", "--target", "1", "--net", "--", "iscsiadm"],
    });
  });

  it("the controller Deployment's driver serves the controller on the sidecars' socket", () => {
    const { args, env } = shipped("metacontroller/base/csi-controller.yaml");
    expect(loadCsiConfig(args, env)).to.deep.include({
      mode: "controller",
      endpoint: "unix:///csi/csi.sock",
    });
  });

  it("without a prefix iscsiadm runs as it is (a node plugin on the host's network)", () => {
    expect(loadCsiConfig(["--mode=node"], { NODE_NAME: "node-a" }).iscsiadm).to.deep.equal(["iscsiadm"]);
  });

  const refused: [string, string[], Record<string, string>, RegExp][] = [
    ["no mode", [], {}, /--mode=controller .* or --mode=node/],
    ["a node without its name", ["--mode=node"], {}, /NODE_NAME is not set: .*spec.nodeName/],
    [
      "a misspelt flag",
      ["--mode=node", "--endpont=unix:///x"],
      { NODE_NAME: "a" },
      /unknown argument "--endpont/,
    ],
    [
      "a prefix that is a shell string",
      ["--mode=node"],
      { NODE_NAME: "a", ISCSI_COMMAND_PREFIX: "nsenter -t 1 -n" },
      /ISCSI_COMMAND_PREFIX must be a JSON array of strings, e\.g\. \["nsenter","--target","1","--net","--"\]/,
    ],
  ];
  for (const [what, argv, env, message] of refused)
    it(`refuses ${what}, naming the fix`, () => {
      expect(() => loadCsiConfig(argv, env)).to.throw(message);
    });
});
