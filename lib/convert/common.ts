// What the two converters share: how a problem names its object and field, the pools they build, and the
// checks that keep a conversion from guessing (an unknown field, a device on two pools or another node).
import { API_VERSION, KIND, LABEL } from "../../api/constants.js";
import type { BlockDevice, CSPC, KubeObject, PoolConfig, PoolSpec } from "../../api/types.js";
import { deviceHost } from "../inventory.js";
import { isRecord } from "../request.js";

/** Something the input says that has no openebs.io/v1alpha1 equivalent, or that is missing: never guessed. */
export interface ConvertProblem {
  /** "StoragePoolClaim pool1", "CStorPoolCluster openebs/cstor-storage". */
  object: string;
  field: string;
  message: string;
}

export interface Converted {
  cspc: CSPC;
  /** What the user should know before applying it (e.g. which claims to adopt). */
  notes: string[];
}

export function describe(obj: KubeObject): string {
  return `${obj.kind} ${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ""}${obj.metadata.name ?? "(no name)"}`;
}

/** Collects the problems of a conversion, each naming its object. */
export class Problems {
  readonly list: ConvertProblem[] = [];
  add(obj: KubeObject, field: string, message: string): void {
    this.list.push({ object: describe(obj), field, message });
  }
  /** The problems about one object, which then need not name it at every call. */
  about(obj: KubeObject): ObjectProblems {
    return new ObjectProblems(this, obj);
  }
}

/** The field names a converter knows at one place, and the old names it recognises there. */
export interface KnownFields {
  known: readonly string[];
  /** Old name → the current one, so the problem says to rename rather than to remove. */
  renamed?: Readonly<Record<string, string>>;
}

/** The problems about one object. */
export class ObjectProblems {
  constructor(
    private readonly problems: Problems,
    readonly obj: KubeObject,
  ) {}
  add(field: string, message: string): void {
    this.problems.add(this.obj, field, message);
  }
  /** Each key of `value` not known is a problem: a field this converter does not know is never dropped. */
  unknownFields(field: string, value: unknown, { known, renamed = {} }: KnownFields): void {
    if (!isRecord(value)) return;
    for (const key of Object.keys(value).sort()) {
      if (known.includes(key)) continue;
      const fix = renamed[key]
        ? `it is the design's old name of ${renamed[key]}: rename it`
        : "remove it, or convert by hand";
      this.add(
        `${field}.${key}`,
        `${field}.${key} has no openebs.io/v1alpha1 equivalent (known: ${known.join(", ")}): ${fix}`,
      );
    }
  }
}

/** What every converter of one input shares: where problems go, and which devices are already taken. */
export interface Conversion {
  problems: Problems;
  devices: DeviceRegistry;
}

/** Upstream names its claims and pools after object UIDs: without one there is no pool name to adopt. */
export function uidOf(problems: ObjectProblems, what: string): string | undefined {
  const uid = problems.obj.metadata.uid;
  if (!uid)
    problems.add(
      "metadata.uid",
      `metadata.uid is missing, and ${what}: give the object as the cluster returns it (kubectl get -o yaml), not the manifest it was applied from`,
    );
  return uid;
}

/** The zpool name both upstream operators give a pool: "cstor-" + a UID. */
export function upstreamPoolName(uid: string): string {
  return `cstor-${uid}`;
}

/** Device → the pool (by index) and object that lists it; a device listed twice is a problem. */
export class DeviceRegistry {
  private readonly owners = new Map<string, string>();
  constructor(
    private readonly problems: Problems,
    private readonly blockDevices: ReadonlyMap<string, BlockDevice> | undefined,
  ) {}

  /** Whether BlockDevices were given, so that a device's node can be checked. */
  get knowsDevices(): boolean {
    return this.blockDevices !== undefined;
  }

  /** Registers a device of a pool on `host`; false (with a problem) when it cannot be used as said. */
  take(obj: KubeObject, field: string, device: string, host: string | undefined): boolean {
    const where = `${describe(obj)} ${field}`;
    const earlier = this.owners.get(device);
    if (earlier !== undefined) {
      this.problems.add(
        obj,
        field,
        `block device ${device} is also listed by ${earlier}: one device belongs to one pool; check which pool really has it (zpool status on the nodes)`,
      );
      return false;
    }
    this.owners.set(device, where);
    if (!this.blockDevices) return true;
    const bd = this.blockDevices.get(device);
    if (!bd) {
      this.problems.add(
        obj,
        field,
        `block device ${device} is not among the BlockDevices given: add them (kubectl get bd -n openebs -o yaml)`,
      );
      return false;
    }
    const bdHost = deviceHost(bd);
    if (host !== undefined && bdHost !== undefined && bdHost !== host) {
      this.problems.add(
        obj,
        field,
        `block device ${device} is attached to node ${bdHost}, not to ${host} where the pool is: the pool cannot be adopted on the wrong node; check the BlockDevice and the pool's node`,
      );
      return false;
    }
    return true;
  }
}

/** BlockDevices by name, or undefined when none were given. */
export function blockDevicesByName(objects: readonly KubeObject[]): Map<string, BlockDevice> | undefined {
  const bds = objects.filter((o) => o.kind === KIND.blockDevice);
  if (bds.length === 0) return undefined;
  return new Map(bds.map((bd) => [bd.metadata.name ?? "", bd as BlockDevice]));
}

/** A pool spec pinned to one node by its hostname label, as both upstream operators pin pools. */
export function poolOnHost(
  host: string,
  raidGroups: PoolSpec["raidGroups"],
  poolConfig: PoolConfig,
): PoolSpec {
  return { nodeSelector: { [LABEL.hostname]: host }, raidGroups, poolConfig };
}

export function cspcObject(name: string, namespace: string, pools: PoolSpec[]): CSPC {
  return { apiVersion: API_VERSION, kind: KIND.cspc, metadata: { name, namespace }, spec: { pools } };
}
