// The target agent's environment as the target Deployment sets it (lib/volume/children.ts), and the errors a
// wrong value gives: each names the variable and the fix, and the agent does not start.
import { expect } from "chai";
import { loadTargetConfig } from "../../volume-target/config.js";

const ENV = {
  OPENEBS_IO_CSTOR_VOLUME: "pvc-1",
  NAMESPACE: "openebs",
  NODE_NAME: "node-a",
  POD_IP: "10.1.2.3",
  CHAP_USERNAME: "pvc-1",
  CHAP_PASSWORD: "0123456789abcdef0123456789abcdef",
  ISCSI_COMMAND_PREFIX: '["nsenter","--target","1","--net","--"]',
};

describe("volume target: configuration from the environment", () => {
  it("reads the Deployment's environment, with names derived from the volume", () => {
    const config = loadTargetConfig(ENV);
    expect(config).to.deep.include({
      volume: "pvc-1",
      namespace: "openebs",
      node: "node-a",
      portal: "10.1.2.3:3260",
      port: 9500,
      chap: { user: "pvc-1", password: "0123456789abcdef0123456789abcdef" },
      iscsiadm: ["nsenter", "--target", "1", "--net", "--", "iscsiadm"],
      legTimeoutSeconds: 5,
      passIntervalMs: 2000,
      watchIntervalMs: 250,
      snapshotHoldMs: 5000,
    });
    expect(loadTargetConfig({ ...ENV, SNAPSHOT_HOLD_SECONDS: "2" }).snapshotHoldMs).to.equal(2000);
    expect(config.names.array).to.match(/^cstor-[0-9a-f]{16}$/);
    expect(config.names.array.length, "md keeps 32 bytes of a name").to.be.at.most(32);
    expect(loadTargetConfig({ ...ENV, OPENEBS_IO_CSTOR_VOLUME: "pvc-2" }).names.array).to.not.equal(
      config.names.array,
    );
  });

  const refused: [string, Record<string, string>, RegExp][] = [
    [
      "no volume",
      { OPENEBS_IO_CSTOR_VOLUME: "" },
      /^OPENEBS_IO_CSTOR_VOLUME is not set: the target Deployment sets it/,
    ],
    ["no pod address", { POD_IP: "" }, /^POD_IP is not set: .*status\.podIP/],
    [
      "no CHAP password",
      { CHAP_PASSWORD: "" },
      /^CHAP_PASSWORD is not set: it comes from the volume's Secret pvc-1-chap/,
    ],
    [
      "a shell string as prefix",
      { ISCSI_COMMAND_PREFIX: "nsenter -t 1 -n" },
      /must be a JSON array of strings/,
    ],
    ["a port out of range", { PORT: "70000" }, /^PORT="70000" is not a port number: set e.g. PORT=9500/],
    [
      "a watch interval of 0",
      { CONSISTENCY_WATCH_MS: "0" },
      /^CONSISTENCY_WATCH_MS="0" is not a number of milliseconds/,
    ],
    [
      "a snapshot hold of 0 s",
      { SNAPSHOT_HOLD_SECONDS: "0" },
      /^SNAPSHOT_HOLD_SECONDS="0" is not a whole number of seconds above 0: set e.g. SNAPSHOT_HOLD_SECONDS=5/,
    ],
    [
      "a snapshot hold the application's SCSI timeout would abort",
      { SNAPSHOT_HOLD_SECONDS: "30" },
      /^SNAPSHOT_HOLD_SECONDS=30 holds a snapshot's writes longer than 20 s, .* set at most SNAPSHOT_HOLD_SECONDS=20$/,
    ],
  ];
  for (const [what, change, error] of refused)
    it(`refuses ${what}`, () => expect(() => loadTargetConfig({ ...ENV, ...change })).to.throw(error));
});
