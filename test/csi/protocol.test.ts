// The CSI messages as the spec lays them on the wire (csi/protocol.ts): bytes worked out by hand from the spec's
// field numbers, so a wrong number in the declaration fails here and not only against csi-sanity.
import { expect } from "chai";
import { methodNames, serviceDefinition } from "../../csi/protocol.js";

const hex = (buffer: Buffer) => buffer.toString("hex");

describe("csi: the protocol declared from the spec", () => {
  it("writes a CreateVolumeRequest with the spec's field numbers", () => {
    const { requestSerialize } = serviceDefinition("Controller").CreateVolume;
    const bytes = requestSerialize({
      name: "x", // 1: 0a 01 78
      capacity_range: { required_bytes: 1024 ** 3 }, // 2: 12 06 | 08 80 80 80 80 04
      volume_capabilities: [{ mount: { fs_type: "ext4" }, access_mode: { mode: "SINGLE_NODE_WRITER" } }], // 3
      parameters: { a: "b" }, // 4: a map entry, key 1, value 2
    });
    expect(hex(bytes)).to.equal(
      "0a0178" +
        "1206088080808004" +
        "1a0c" +
        "1206" +
        "0a0465787434" +
        "1a020801" +
        "2206" +
        "0a0161" +
        "120162",
    );
  });

  it("writes a NodeStageVolumeRequest for a block volume with its secrets and context", () => {
    const { requestSerialize } = serviceDefinition("Node").NodeStageVolume;
    const bytes = requestSerialize({
      volume_id: "v", // 1
      staging_target_path: "/s", // 3
      volume_capability: { block: {}, access_mode: { mode: "SINGLE_NODE_WRITER" } }, // 4: block 1, access_mode 3
      secrets: { k: "p" }, // 5
      volume_context: { lun: "0" }, // 6
    });
    expect(hex(bytes)).to.equal(
      "0a0176" +
        "1a022f73" +
        "2206" +
        "0a00" +
        "1a020801" +
        "2a06" +
        "0a016b120170" +
        "3208" +
        "0a036c756e120130",
    );
  });

  it("reads a request the way the handlers see it: zero values, empty lists and maps, null messages", () => {
    const { requestDeserialize } = serviceDefinition("Controller").ControllerPublishVolume;
    const request = requestDeserialize(Buffer.from("0a0176", "hex"));
    expect(request).to.deep.equal({
      volume_id: "v",
      node_id: "",
      volume_capability: null,
      readonly: false,
      secrets: {},
      volume_context: {},
    });
  });

  it("writes Probe's readiness as google.protobuf.BoolValue and enum values by name", () => {
    const probe = serviceDefinition("Identity").Probe;
    expect(hex(probe.responseSerialize({ ready: { value: true } }))).to.equal("0a020801");
    const capabilities = serviceDefinition("Controller").ControllerGetCapabilities;
    // capabilities 1 { rpc 1 { type 1: EXPAND_VOLUME = 9 } }
    const bytes = capabilities.responseSerialize({ capabilities: [{ rpc: { type: "EXPAND_VOLUME" } }] });
    expect(hex(bytes)).to.equal("0a04" + "0a02" + "0809");
  });

  it("writes the snapshot RPCs' messages with the spec's field numbers, the creation time as a Timestamp", () => {
    const create = serviceDefinition("Controller").CreateSnapshot;
    const request = create.requestSerialize({
      source_volume_id: "v", // 1: 0a 01 76
      name: "s", // 2: 12 01 73
      parameters: { a: "b" }, // 4
    });
    expect(hex(request)).to.equal("0a0176" + "120173" + "2206" + "0a0161120162");
    const response = create.responseSerialize({
      snapshot: {
        size_bytes: 1024 * 1024, // 1: 08 | 80 80 40
        snapshot_id: "s", // 2
        source_volume_id: "v", // 3
        creation_time: { seconds: 1, nanos: 2 }, // 4: google.protobuf.Timestamp { seconds 1, nanos 2 }
        ready_to_use: true, // 5: 28 01
      },
    });
    expect(hex(response)).to.equal("0a12" + "08808040" + "120173" + "1a0176" + "2204" + "08011002" + "2801");
    const list = serviceDefinition("Controller").ListSnapshots;
    const listing = list.requestSerialize({
      max_entries: 2, // 1: 08 02
      starting_token: "t", // 2
      source_volume_id: "v", // 3
      snapshot_id: "s", // 4
    });
    expect(hex(listing)).to.equal("0802" + "120174" + "1a0176" + "220173");
    // entries 1 { snapshot 1 { snapshot_id 2 } }, next_token 2
    const page = list.responseSerialize({ entries: [{ snapshot: { snapshot_id: "s" } }], next_token: "n" });
    expect(hex(page)).to.equal("0a05" + "0a03120173" + "12016e");
    const deletion = serviceDefinition("Controller").DeleteSnapshot;
    expect(hex(deletion.requestSerialize({ snapshot_id: "s" }))).to.equal("0a0173");
  });

  it("declares the RPCs the driver serves under the spec's service paths", () => {
    expect(methodNames("Identity")).to.deep.equal(["GetPluginInfo", "GetPluginCapabilities", "Probe"]);
    expect(serviceDefinition("Node").NodeGetInfo.path).to.equal("/csi.v1.Node/NodeGetInfo");
    expect(serviceDefinition("Controller").CreateVolume.path).to.equal("/csi.v1.Controller/CreateVolume");
    expect(serviceDefinition("Controller").ListSnapshots.path).to.equal("/csi.v1.Controller/ListSnapshots");
  });
});
