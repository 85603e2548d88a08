// `cstor-pool convert`: the objects of an SPC cluster (StoragePoolClaims, CStorPools, BlockDevices) or of
// cstor-operators (cstor.openebs.io/v1 CStorPoolClusters and CStorPoolInstances) → openebs.io/v1alpha1
// CStorPoolClusters describing the pools that exist, each naming its zpool for adoption
// (poolConfig.existingPoolName). Pure: objects in, CSPCs or problems out. Nothing is guessed: with any problem
// there is no output (docs/adr/0030-from-storagepoolclaim-and-cstor-openebs-io-v1.md).
import { API_VERSION, KIND } from "../../api/constants.js";
import type { CSPC, KubeObject } from "../../api/types.js";
import { canonicalize } from "../canonical.js";
import { checkCspcShape } from "../rules/admission-shape.js";
import {
  blockDevicesByName,
  DeviceRegistry,
  describe,
  Problems,
  type Converted,
  type ConvertProblem,
} from "./common.js";
import { convertV1Cspc, V1_GROUP } from "./cspc-v1.js";
import { convertSpc } from "./spc.js";

export type { ConvertProblem } from "./common.js";

export interface ConvertResult {
  cspcs: CSPC[];
  notes: string[];
  /** When not empty, cspcs is empty: a partial conversion would lose pools without saying so. */
  problems: ConvertProblem[];
}

/** Kinds read as facts for the conversion; they are not converted themselves. */
const CONTEXT_KINDS = new Set([KIND.blockDevice, KIND.blockDeviceClaim, "StoragePool"]);

/** The input by what it is to the conversion. */
interface ConvertInput {
  spcs: KubeObject[];
  cstorPools: KubeObject[];
  v1Cspcs: KubeObject[];
  v1Cspis: KubeObject[];
}

/**
 * Converts every StoragePoolClaim and v1 CStorPoolCluster among `objects`. `namespace` is where an SPC's
 * CStorPoolCluster goes (SPCs are cluster-scoped); a v1 CSPC keeps its own.
 */
export function convertObjects(objects: readonly KubeObject[], namespace: string): ConvertResult {
  const problems = new Problems();
  const input = sortInput(objects);
  checkInput(objects, input, problems);
  const conversion = { problems, devices: new DeviceRegistry(problems, blockDevicesByName(objects)) };
  const converted = [
    ...input.spcs.map((spc) => convertSpc(spc, input.cstorPools, namespace, conversion)),
    ...input.v1Cspcs.map((cspc) => convertV1Cspc(cspc, input.v1Cspis, conversion)),
  ];
  checkConverted(converted, [...input.spcs, ...input.v1Cspcs], problems);
  if (problems.list.length > 0) return { cspcs: [], notes: [], problems: problems.list };
  return convertedResult(converted.filter((c) => c !== undefined));
}

function sortInput(objects: readonly KubeObject[]): ConvertInput {
  const isV1 = (o: KubeObject) => (o.apiVersion ?? "").startsWith(V1_GROUP);
  return {
    spcs: objects.filter((o) => o.kind === "StoragePoolClaim"),
    cstorPools: objects.filter((o) => o.kind === "CStorPool"),
    v1Cspcs: objects.filter((o) => o.kind === KIND.cspc && isV1(o)),
    v1Cspis: objects.filter((o) => o.kind === KIND.cspi && isV1(o)),
  };
}

/** What is refused before converting: objects of other kinds, CStorPools without their SPC, nothing to convert. */
function checkInput(objects: readonly KubeObject[], input: ConvertInput, problems: Problems): void {
  const { spcs, cstorPools, v1Cspcs, v1Cspis } = input;
  const read = new Set([...spcs, ...cstorPools, ...v1Cspcs, ...v1Cspis]);
  for (const o of objects) {
    if (read.has(o) || CONTEXT_KINDS.has(o.kind)) continue;
    const already = o.apiVersion === API_VERSION && (o.kind === KIND.cspc || o.kind === KIND.cspi);
    problems.add(
      o,
      "kind",
      already
        ? `already ${API_VERSION}: nothing to convert`
        : `${o.apiVersion}/${o.kind} is not converted: give StoragePoolClaims with their CStorPools and BlockDevices, or ${V1_GROUP}v1 CStorPoolClusters (and CStorPoolInstances)`,
    );
  }
  for (const csp of cstorPools) {
    const owner = csp.metadata.labels?.["openebs.io/storage-pool-claim"];
    if (!spcs.some((s) => s.metadata.name === owner))
      problems.add(
        csp,
        "metadata.labels",
        `its StoragePoolClaim ${owner ?? "(no openebs.io/storage-pool-claim label)"} is not in the input: give both (kubectl get spc,csp,bd -o yaml)`,
      );
  }
  if (spcs.length === 0 && v1Cspcs.length === 0 && problems.list.length === 0) {
    problems.list.push({
      object: "(input)",
      field: "kind",
      message: "no StoragePoolClaim and no cstor.openebs.io/v1 CStorPoolCluster: nothing to convert",
    });
  }
}

/** What is refused after converting: a CSPC its schema would refuse, two sources converting to one CSPC. */
function checkConverted(
  converted: readonly (Converted | undefined)[],
  sources: readonly KubeObject[],
  problems: Problems,
): void {
  converted.forEach((c, i) => {
    // What the CSPC's schema would refuse must be fixed before anything is written.
    for (const v of c ? checkCspcShape(c.cspc) : [])
      problems.add(
        sources[i],
        v.pool >= 0 ? `spec.pools[${v.pool}]` : "spec",
        `the converted CStorPoolCluster would be refused: ${v.message}`,
      );
  });
  const names = new Map<string, KubeObject>();
  converted.forEach((c, i) => {
    if (!c) return;
    const key = `${c.cspc.metadata.namespace}/${c.cspc.metadata.name}`;
    const earlier = names.get(key);
    if (earlier)
      problems.add(
        sources[i],
        "metadata.name",
        `converts to CStorPoolCluster ${key}, as ${describe(earlier)} does: convert them separately, and rename one`,
      );
    names.set(key, sources[i]);
  });
}

function convertedResult(done: readonly Converted[]): ConvertResult {
  return {
    cspcs: done
      .map((c) => canonicalize(c.cspc) as unknown as CSPC)
      .sort((a, b) =>
        `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(
          `${b.metadata.namespace}/${b.metadata.name}`,
        ),
      ),
    notes: done.flatMap((c) => [
      ...c.notes,
      `CStorPoolCluster ${c.cspc.metadata.namespace}/${c.cspc.metadata.name}: adopt the BlockDeviceClaims of its ${c.cspc.spec.pools.flatMap((p) => (p.raidGroups ?? []).flatMap((g) => g.blockDevices)).length} block device(s) before applying it, never release them (docs/migration.md)`,
    ]),
    problems: [],
  };
}
