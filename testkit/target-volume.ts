// The volume a target world serves (testkit/target-world.ts), as the data-path tests drive it: its CStorVolume
// as cvc-sync writes it, the target agent (volume-target/main.ts, transpiled for the guest) started on a guest
// node as the target Deployment's pod, the target's status as it reports it, and each leg's data compared.
import type { CV, CVTargetStatus } from "../api/types.js";
import { API_VERSION, KIND, LABEL } from "../api/constants.js";
import { replicaId } from "../lib/names.js";
import { clientInitiatorIqn, volumeIqn } from "../lib/volume/iqn.js";
import type { Identity } from "./kube.js";
import type { TargetWorld } from "./target-world.js";
import type { GuestProcess } from "./uml/guest-process.js";
import type { UmlGuest } from "./uml/guest.js";

/** The Service's ClusterIP, as kube-proxy would: an address that moves to the node the target runs on. */
export const serviceAddress = (world: TargetWorld) => world.network.serviceAddress();

const cvPath = (world: TargetWorld) =>
  `/apis/${API_VERSION}/namespaces/${world.namespace}/cstorvolumes/${world.volume}`;

/** The replica counts of a CStorVolume naming the world's first `replicas` replicas, as cvc-sync writes them. */
function replicaFactors(world: TargetWorld, replicas: number) {
  const knownReplicas = Object.fromEntries(
    world.replicas
      .slice(0, replicas)
      .map((r) => [replicaId(world.volume, r.cspi.metadata.name!), r.cspi.metadata.name!]),
  );
  return {
    replicationFactor: replicas,
    // cvc-sync's majority: a write needs more than half of the replicas.
    consistencyFactor: Math.floor(replicas / 2) + 1,
    desiredReplicationFactor: replicas,
    replicaDetails: { knownReplicas },
  };
}

/**
 * The CStorVolume as cvc-sync writes it (lib/volume/children.ts): the target's view of the replicas, the world's
 * first `replicas` of them (all by default).
 */
export async function createVolume(
  world: TargetWorld,
  capacity: string,
  replicas = world.replicas.length,
): Promise<void> {
  const service = serviceAddress(world);
  const created = await world.cluster.request(
    world.cluster.admin,
    "POST",
    `/apis/${API_VERSION}/namespaces/${world.namespace}/cstorvolumes`,
    {
      apiVersion: API_VERSION,
      kind: KIND.cv,
      metadata: { name: world.volume, labels: { [LABEL.persistentVolume]: world.volume } },
      spec: {
        capacity,
        targetIP: service,
        targetPort: "3260",
        targetPortal: `${service}:3260`,
        iqn: volumeIqn(world.volume),
        ...replicaFactors(world, replicas),
      },
    },
  );
  if (created.status !== 201)
    throw new Error(
      `creating CStorVolume ${world.volume}: ${created.status} ${JSON.stringify(created.body)}`,
    );
}

/** The volume scaled to the world's first `replicas` replicas, as cvc-sync patches its CStorVolume. */
export async function scaleVolume(world: TargetWorld, replicas: number): Promise<void> {
  const response = await world.cluster.request(
    world.cluster.admin,
    "PATCH",
    cvPath(world),
    { spec: replicaFactors(world, replicas) },
    "application/merge-patch+json",
  );
  if (response.status !== 200)
    throw new Error(
      `scaling CStorVolume ${world.volume} to ${replicas} replicas: ${response.status} ${JSON.stringify(response.body)}`,
    );
}

/** The CStorVolume's status.target (undefined until the agent wrote it); throws when the apiserver does not answer. */
export async function targetStatus(world: TargetWorld): Promise<CVTargetStatus | undefined> {
  const response = await world.cluster.request(world.cluster.admin, "GET", cvPath(world));
  if (response.status !== 200)
    throw new Error(`CStorVolume ${world.volume}: ${response.status} ${JSON.stringify(response.body)}`);
  return (response.body as CV).status?.target;
}

/**
 * The target's pod on `node`: the Service's address moved there, then the agent `agentMain` (compileForGuest)
 * started under the cstor-volume-target ServiceAccount (`identity`), with short leg and pass intervals.
 */
export async function startTargetAgent(
  world: TargetWorld,
  node: UmlGuest,
  agentMain: string,
  identity: Identity,
): Promise<GuestProcess> {
  const service = serviceAddress(world);
  await node.run(`ip addr add ${service}/24 dev vec0`);
  return world.startProcess(node, {
    label: `volume target on ${node.name}`,
    argv: [process.execPath, agentMain],
    env: {
      PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
      OPENEBS_IO_CSTOR_VOLUME: world.volume,
      NAMESPACE: world.namespace,
      NODE_NAME: node.name,
      POD_IP: service,
      CHAP_USERNAME: world.chap.user,
      CHAP_PASSWORD: world.chap.password,
      KUBECONFIG: world.guestKubeconfig(identity),
      LEG_REPLACEMENT_TIMEOUT_SECONDS: "3",
      PASS_INTERVAL_SECONDS: "1",
    },
  });
}

/**
 * The application's node logs in to the LUN with the volume's client name and CHAP (a volume published to no
 * node admits it); the LUN's disk there, /dev/sdX.
 */
export async function clientLogin(world: TargetWorld, app: UmlGuest): Promise<string> {
  const iqn = volumeIqn(world.volume);
  const disk = (
    await app.run(
      `iscsi_login_as client ${clientInitiatorIqn(world.volume)} ${iqn} ${serviceAddress(world)}:3260 ` +
        `${world.chap.user} ${world.chap.password} >/dev/null && iscsi_disk ${iqn} 0 30`,
      { timeoutMs: 90_000 },
    )
  ).trim();
  if (!/^\/dev\/sd[a-z]+$/.test(disk)) throw new Error(`the application's LUN on ${app.name}: got ${disk}`);
  return disk;
}

/**
 * Each leg's data, read on the target's node over its own session past md's data offset, once the array is
 * idle: one "<device> <sha256>" per leg. Nothing may write the LUN meanwhile, or two legs differ by that write.
 */
export async function legChecksums(targetNode: UmlGuest): Promise<{ text: string; sums: string[] }> {
  const text = await targetNode.run(
    `md=$(readlink -f /dev/md/cstor-*); size=$(cat /sys/block/\${md##*/}/size)
md_wait_idle \${md##*/} 120 || exit 1
for d in /sys/block/\${md##*/}/md/dev-*; do
  leg=\${d##*/dev-}; off=$(cat $d/offset)
  echo "$leg $(dd if=/dev/$leg bs=1M skip=$((off * 512)) count=$((size * 512)) iflag=direct,skip_bytes,count_bytes status=none | sha256sum)"
done`,
    { timeoutMs: 180_000 },
  );
  const sums = text
    .trim()
    .split("\n")
    .map((line) => line.split(/\s+/)[1]);
  return { text, sums };
}
