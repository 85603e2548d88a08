// The private network of one data-path test file (docs/data-path-tests.md): a network namespace of its own with a
// bridge at 10.200.<subnet>.1/24 and one TAP device per UML guest, enslaved to the bridge. The namespace's name
// carries the process id and a counter, so two test files (or two runs) never share one; the addresses can repeat
// because every namespace has its own. Host-side servers of the test (tgtd) run inside it through `prefix`, and
// listen on the bridge address. close() deletes the namespace, and with it the bridge and the TAP devices.
import { execFile, execFileSync } from "node:child_process";
import { onStop } from "../processes.js";

/** Pods' addresses are 20 to 99, the Service's is 100, guests' start at 110. */
const LAST_POD_HOST = 99;
const SERVICE_HOST = 100;
const FIRST_GUEST_HOST = 110;

/** Runs a program with a hard timeout; rejects with its output on a non-zero exit. */
export function runChecked(file: string, args: readonly string[], timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { timeout: timeoutMs, killSignal: "SIGKILL", encoding: "utf8", maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${file} ${args.join(" ")}: ${stderr || error.message}`));
        else resolve(stdout);
      },
    );
  });
}

let created = 0;
const open = new Set<string>();
// A test process that ends without the root hooks' stopAll (a crash) still leaves no namespace behind.
process.once("exit", () => {
  for (const namespace of open)
    try {
      execFileSync("ip", ["netns", "delete", namespace], { stdio: "ignore", timeout: 10_000 });
    } catch {
      // already gone
    }
});

export class TestNetwork {
  private readonly taps: string[] = [];
  private closed = false;

  private constructor(
    /** The namespace's name (`ip netns`). */
    readonly namespace: string,
    /** Third octet of the namespace's 10.200.<subnet>.0/24. */
    readonly subnet: number,
  ) {}

  /** The bridge's address: where host-side servers of the test listen, and the guests' gateway. */
  get hostAddress(): string {
    return `10.200.${this.subnet}.1`;
  }

  /** Run a host program inside the namespace: prepend this to its argv. */
  get prefix(): string[] {
    return ["ip", "netns", "exec", this.namespace];
  }

  /** The namespace as a file, for `nsenter --net=` (to join it together with another namespace). */
  get namespaceFile(): string {
    return `/run/netns/${this.namespace}`;
  }

  /**
   * Address `10.200.<subnet>.<host>`, host 20 to 99 (the guests have 110 and up). Host-side servers that stand
   * in for pods listen on one each, added to the bridge with addAddress, as every pod has its own IP.
   */
  podAddress(host: number): string {
    if (!(host >= 20 && host <= LAST_POD_HOST))
      throw new Error(`pod address host part ${host} is not in 20-${LAST_POD_HOST}`);
    return `10.200.${this.subnet}.${host}`;
  }

  /** Adds `address` (/24) to the bridge; it goes with the namespace, or with removeAddress. */
  async addAddress(address: string): Promise<void> {
    await runChecked("ip", ["-n", this.namespace, "addr", "add", `${address}/24`, "dev", "br0"]);
  }

  async removeAddress(address: string): Promise<void> {
    if (this.closed) return;
    await runChecked("ip", ["-n", this.namespace, "addr", "del", `${address}/24`, "dev", "br0"]);
  }

  /** The Service's ClusterIP, outside the pods' and the guests' ranges. */
  serviceAddress(): string {
    return `10.200.${this.subnet}.${SERVICE_HOST}`;
  }

  /**
   * Address of guest number `index` (1, 2, ...): 10.200.<subnet>.<109 + index>, apart from the pods' range: a
   * chaos run boots a spare guest for every target move, and a guest on a pool pod's address made the pod,
   * or the guest, unreachable.
   */
  guestAddress(index: number): string {
    const host = FIRST_GUEST_HOST - 1 + index;
    if (!(index >= 1 && host <= 254))
      throw new Error(`guest number ${index} is not in 1-${255 - FIRST_GUEST_HOST}`);
    return `10.200.${this.subnet}.${host}`;
  }

  static async create(subnet = 1 + (process.pid % 250)): Promise<TestNetwork> {
    const network = new TestNetwork(`cstor-uml-${process.pid}-${++created}`, subnet);
    await runChecked("ip", ["netns", "add", network.namespace]);
    open.add(network.namespace);
    onStop(() => network.close());
    const ip = (...args: string[]) => runChecked("ip", ["-n", network.namespace, ...args]);
    await ip("link", "set", "lo", "up");
    await ip("link", "add", "br0", "type", "bridge");
    await ip("addr", "add", `${network.hostAddress}/24`, "dev", "br0");
    await ip("link", "set", "br0", "up");
    return network;
  }

  /** A persistent TAP device on the bridge, which a UML guest opens by name (vector transport). */
  async addTap(name: string): Promise<string> {
    if (name.length > 15) throw new Error(`interface name ${name} is longer than 15 characters`);
    const ip = (...args: string[]) => runChecked("ip", ["-n", this.namespace, ...args]);
    await ip("tuntap", "add", "dev", name, "mode", "tap");
    this.taps.push(name);
    await ip("link", "set", name, "master", "br0");
    await ip("link", "set", name, "up");
    return name;
  }

  /** Deletes the namespace; its devices go with it. Stop what runs inside it first. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    open.delete(this.namespace);
    await runChecked("ip", ["netns", "delete", this.namespace]).catch(() => undefined);
  }
}
