// The test driver must behave like Metacontroller, or the loop tests prove nothing. These cases pin the parts
// of the documented v2 contract the loop relies on, with a scripted hook server and ConfigMap children.
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import express from "express";
import { API_VERSION, KIND } from "../../api/constants.js";
import { getIfPresent, projectInstalled, type KubeCluster } from "../../testkit/kube.js";
import {
  CONTROLLER_UID,
  HookCallError,
  LAST_APPLIED,
  MetacontrollerDriver,
} from "../../testkit/metacontroller-driver.js";
import { MetacontrollerLoop } from "../../testkit/metacontroller-loop.js";
import { onStop } from "../../testkit/processes.js";

const NS = "mc-driver";
const CONTROLLER = "driver-contract";
const FINALIZER = `metacontroller.io/compositecontroller-${CONTROLLER}`;
const DECORATOR = "driver-events";

interface Scripted {
  status?: number;
  body: unknown;
}

describe("integration: the Metacontroller test driver keeps the v2 contract", function () {
  this.timeout(20 * 60_000);
  let cluster: KubeCluster;
  let driver: MetacontrollerDriver;
  const requests: { path: string; body: any }[] = [];
  let answer: (path: string, body: any) => Scripted | Promise<Scripted> = () => ({
    body: { status: {}, children: [] },
  });

  const cspcObject = (name: string) => ({
    apiVersion: API_VERSION,
    kind: KIND.cspc,
    metadata: { name, namespace: NS },
    spec: {
      pools: [
        {
          nodeSelector: { "kubernetes.io/hostname": "n" },
          raidGroups: [{ type: "stripe", blockDevices: [{ blockDeviceName: `${name}-bd` }] }],
        },
      ],
    },
  });
  const configMap = (name: string, data: Record<string, string>, extra: Record<string, unknown> = {}) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, ...extra },
    data,
  });
  const getConfigMap = (name: string): Promise<any> =>
    getIfPresent(cluster, `/api/v1/namespaces/${NS}/configmaps/${name}`);
  const getCspc = (name: string): Promise<any> =>
    getIfPresent(cluster, `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters/${name}`);
  const newParent = async (name: string): Promise<any> => {
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(cspcObject(name)) });
    return getCspc(name);
  };

  before(async () => {
    cluster = await projectInstalled();
    const app = express();
    app.use(express.json({ limit: "8mb" }));
    app.post("*path", async (req, res) => {
      requests.push({ path: req.path, body: req.body });
      const scripted = await answer(req.path, req.body);
      res.status(scripted.status ?? 200).json(scripted.body);
    });
    const server = app.listen(0, "127.0.0.1");
    await once(server, "listening");
    onStop(() => new Promise<void>((resolve) => server.close(() => resolve())));
    driver = new MetacontrollerDriver({
      cluster,
      hookServer: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    });

    const hook = (path: string) => ({
      version: "v2",
      webhook: { url: `http://scripted.invalid${path}`, timeout: "5s" },
    });
    const controller = {
      apiVersion: "metacontroller.k8s.io/v1alpha1",
      kind: "CompositeController",
      metadata: { name: CONTROLLER },
      spec: {
        generateSelector: true,
        parentResource: { apiVersion: API_VERSION, resource: "cstorpoolclusters" },
        childResources: [{ apiVersion: "v1", resource: "configmaps", updateStrategy: { method: "InPlace" } }],
        hooks: { sync: hook("/sync"), finalize: hook("/finalize") },
      },
    };
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } }, controller]
        .map((o) => JSON.stringify(o))
        .join("\n"),
    });
  });

  after(async () => {
    // The loop tests converge over every CompositeController; this scripted one must not join them.
    await cluster?.kubectl(["delete", "compositecontroller", CONTROLLER, "--ignore-not-found"]);
    await cluster?.kubectl(["delete", "decoratorcontroller", DECORATOR, "--ignore-not-found"]);
  });

  beforeEach(() => {
    requests.length = 0;
  });

  it("sends a v2 request: the controller, the full parent, an entry per child type keyed Kind.version, finalizing false", async () => {
    const parent = await newParent("request-shape");
    answer = () => ({ body: { status: {}, children: [] } });
    await driver.syncComposite(CONTROLLER, NS, "request-shape");
    expect(requests.map((r) => r.path)).to.deep.equal(["/sync"]);
    const { body } = requests[0];
    expect(Object.keys(body).sort()).to.deep.equal([
      "children",
      "controller",
      "finalizing",
      "parent",
      "related",
    ]);
    expect(body.controller.metadata.name).to.equal(CONTROLLER);
    expect(body.parent.metadata.uid).to.equal(parent.metadata.uid);
    expect(body.parent.metadata.finalizers, "the finalizer is added before the hook is called").to.include(
      FINALIZER,
    );
    expect(body.children).to.deep.equal({ "ConfigMap.v1": {} });
    expect(body.related).to.deep.equal({});
    expect(body.finalizing).to.equal(false);
  });

  it("creates children with a controllerRef, the controller-uid label and the last-applied annotation; keys them namespace/name", async () => {
    const parent = await newParent("create");
    answer = () => ({ body: { status: {}, children: [configMap("create-child", { a: "1" })] } });
    const outcome = await driver.syncComposite(CONTROLLER, NS, "create");
    expect(outcome.writes).to.include(`create ConfigMap ${NS}/create-child`);
    const child = await getConfigMap("create-child");
    expect(child.metadata.ownerReferences).to.deep.equal([
      {
        apiVersion: API_VERSION,
        kind: KIND.cspc,
        name: "create",
        uid: parent.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(child.metadata.labels).to.deep.equal({ [CONTROLLER_UID]: parent.metadata.uid });
    expect(JSON.parse(child.metadata.annotations[LAST_APPLIED])).to.deep.equal({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "create-child", namespace: NS, labels: { [CONTROLLER_UID]: parent.metadata.uid } },
      data: { a: "1" },
    });

    await driver.syncComposite(CONTROLLER, NS, "create");
    expect(Object.keys(requests.at(-1)!.body.children["ConfigMap.v1"])).to.deep.equal([`${NS}/create-child`]);
  });

  it("replaces the parent status with the hook's, injecting observedGeneration, through /status", async () => {
    const parent = await newParent("status");
    answer = () => ({ body: { status: { desiredInstances: 5, provisionedInstances: 2 }, children: [] } });
    await driver.syncComposite(CONTROLLER, NS, "status");
    expect((await getCspc("status")).status).to.deep.equal({
      desiredInstances: 5,
      provisionedInstances: 2,
      observedGeneration: parent.metadata.generation,
    });
    answer = () => ({ body: { status: { healthyInstances: 1 }, children: [] } });
    await driver.syncComposite(CONTROLLER, NS, "status");
    expect((await getCspc("status")).status, "fields the hook stopped returning are gone").to.deep.equal({
      healthyInstances: 1,
      observedGeneration: parent.metadata.generation,
    });
    const again = await driver.syncComposite(CONTROLLER, NS, "status");
    expect(again.writes, "an equal status is not written again").to.deep.equal([]);
  });

  it("updates children InPlace by 3-way merge: drops what the hook dropped, keeps what others added", async () => {
    await newParent("merge");
    answer = () => ({ body: { status: {}, children: [configMap("merge-child", { a: "1", b: "2" })] } });
    await driver.syncComposite(CONTROLLER, NS, "merge");
    const patched = await cluster.request(
      cluster.admin,
      "PATCH",
      `/api/v1/namespaces/${NS}/configmaps/merge-child`,
      { metadata: { labels: { "someone-else": "yes" } }, data: { c: "3" } },
      "application/merge-patch+json",
    );
    expect(patched.status).to.equal(200);
    answer = () => ({ body: { status: {}, children: [configMap("merge-child", { a: "10" })] } });
    const outcome = await driver.syncComposite(CONTROLLER, NS, "merge");
    expect(outcome.writes).to.include(`update ConfigMap ${NS}/merge-child`);
    const child = await getConfigMap("merge-child");
    expect(child.data).to.deep.equal({ a: "10", c: "3" });
    expect(child.metadata.labels).to.include({ "someone-else": "yes" });
    expect((await driver.syncComposite(CONTROLLER, NS, "merge")).writes, "no diff, no update").to.deep.equal(
      [],
    );
  });

  it("deletes children the hook omits, and adopts then deletes a matching orphan", async () => {
    const parent = await newParent("omit");
    answer = () => ({
      body: {
        status: {},
        children: [configMap("omit-kept", { k: "v" }), configMap("omit-gone", { k: "v" })],
      },
    });
    await driver.syncComposite(CONTROLLER, NS, "omit");
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: JSON.stringify({
        ...configMap(
          "omit-orphan",
          { o: "1" },
          { namespace: NS, labels: { [CONTROLLER_UID]: parent.metadata.uid } },
        ),
      }),
    });
    answer = () => ({ body: { status: {}, children: [configMap("omit-kept", { k: "v" })] } });
    const outcome = await driver.syncComposite(CONTROLLER, NS, "omit");
    expect(Object.keys(requests.at(-1)!.body.children["ConfigMap.v1"]).sort()).to.deep.equal([
      `${NS}/omit-gone`,
      `${NS}/omit-kept`,
      `${NS}/omit-orphan`,
    ]);
    expect(outcome.writes).to.include.members([
      `adopt ConfigMap ${NS}/omit-orphan`,
      `delete ConfigMap ${NS}/omit-gone`,
      `delete ConfigMap ${NS}/omit-orphan`,
    ]);
    expect(await getConfigMap("omit-gone")).to.equal(undefined);
    expect(await getConfigMap("omit-orphan")).to.equal(undefined);
    expect(await getConfigMap("omit-kept")).to.not.equal(undefined);
  });

  it("changes nothing when the hook fails or answers outside the strict v2 shape", async () => {
    await newParent("refused");
    answer = () => ({
      body: { status: { desiredInstances: 1 }, children: [configMap("refused-child", { a: "1" })] },
    });
    await driver.syncComposite(CONTROLLER, NS, "refused");
    const before = await getCspc("refused");
    const bad: [string, Scripted, RegExp][] = [
      ["a 500", { status: 500, body: { error: "boom" } }, /answered 500/],
      ["an unknown field", { body: { status: {}, children: [], labels: {} } }, /unknown field "labels"/],
      ["a mistyped field", { body: { status: [], children: [] } }, /field "status" must be object/],
      [
        "a child without a kind",
        { body: { status: {}, children: [{ apiVersion: "v1", metadata: { name: "x" } }] } },
        /needs apiVersion, kind/,
      ],
    ];
    for (const [what, scripted, error] of bad) {
      answer = () => scripted;
      const failure = await driver.syncComposite(CONTROLLER, NS, "refused").then(
        () => undefined,
        (e: Error) => e,
      );
      expect(failure?.message, what).to.match(error);
      if (scripted.status) expect(failure).to.be.instanceOf(HookCallError);
    }
    expect(await getConfigMap("refused-child"), "the child is still there").to.not.equal(undefined);
    expect((await getCspc("refused")).metadata.resourceVersion, "the parent is untouched").to.equal(
      before.metadata.resourceVersion,
    );
  });

  it("treats a lost race (409 on an update) as a reason to sync again, not as done", async () => {
    await newParent("race");
    answer = () => ({ body: { status: {}, children: [configMap("race-child", { a: "1" })] } });
    await driver.syncComposite(CONTROLLER, NS, "race");
    answer = async () => {
      // Someone else changes the child while the hook is thinking: the driver's update carries a stale version.
      await cluster.request(
        cluster.admin,
        "PATCH",
        `/api/v1/namespaces/${NS}/configmaps/race-child`,
        { data: { other: "x" } },
        "application/merge-patch+json",
      );
      return { body: { status: {}, children: [configMap("race-child", { a: "2" })] } };
    };
    const raced = await driver.syncComposite(CONTROLLER, NS, "race");
    expect(raced.writes).to.include(`conflict: update ConfigMap ${NS}/race-child`);
    answer = () => ({ body: { status: {}, children: [configMap("race-child", { a: "2" })] } });
    const retried = await driver.syncComposite(CONTROLLER, NS, "race");
    expect(retried.writes).to.include(`update ConfigMap ${NS}/race-child`);
    expect((await getConfigMap("race-child")).data).to.deep.equal({ a: "2", other: "x" });
  });

  it("on deletion calls the finalize hook with finalizing true until it answers finalized, then removes its finalizer", async () => {
    await newParent("finalize");
    answer = () => ({ body: { status: {}, children: [configMap("finalize-child", { a: "1" })] } });
    await driver.syncComposite(CONTROLLER, NS, "finalize");
    await cluster.kubectl(["delete", "cspc", "finalize", "-n", NS, "--wait=false"]);

    answer = (path) => ({
      body:
        path === "/finalize" ? { status: {}, children: [], finalized: false } : { status: {}, children: [] },
    });
    const first = await driver.syncComposite(CONTROLLER, NS, "finalize");
    expect(first.hook).to.equal("finalize");
    expect(requests.at(-1)!.body.finalizing).to.equal(true);
    expect(first.writes, "children are still managed while finalizing").to.include(
      `delete ConfigMap ${NS}/finalize-child`,
    );
    expect((await getCspc("finalize")).metadata.finalizers).to.include(FINALIZER);

    answer = () => ({ body: { status: {}, children: [], finalized: true } });
    const last = await driver.syncComposite(CONTROLLER, NS, "finalize");
    expect(last.writes).to.include(`remove finalizer ${FINALIZER} from CStorPoolCluster ${NS}/finalize`);
    expect(await getCspc("finalize")).to.equal(undefined);
  });

  it("event loop: syncs a target on add and on a label change, never on a status-only change (ignoreStatusChanges), and on resyncs", async () => {
    const hook = { version: "v2", webhook: { url: "http://scripted.invalid/decorate", timeout: "5s" } };
    const decorator = {
      apiVersion: "metacontroller.k8s.io/v1alpha1",
      kind: "DecoratorController",
      metadata: { name: DECORATOR },
      spec: {
        resources: [
          {
            apiVersion: API_VERSION,
            resource: "cstorpoolclusters",
            labelSelector: { matchLabels: { "loop-test": "yes" } },
            ignoreStatusChanges: true,
          },
        ],
        resyncPeriodSeconds: 30,
        hooks: { sync: hook },
      },
    };
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(decorator) });
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: JSON.stringify({
        ...cspcObject("events"),
        metadata: { name: "events", namespace: NS, labels: { "loop-test": "yes" } },
      }),
    });
    let resyncAfter: number | undefined;
    answer = (path) => ({
      body: path === "/decorate" && resyncAfter ? { resyncAfterSeconds: resyncAfter } : {},
    });
    const loop = new MetacontrollerLoop(driver, NS, [DECORATOR]);
    await loop.start();
    const synced = (ran: { parent: string }[]) => ran.map((s) => s.parent);
    const path = `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters/events`;

    expect(synced(await loop.run()), "the add event").to.deep.equal([`${NS}/events`]);
    const status = await cluster.request(
      cluster.admin,
      "PATCH",
      `${path}/status`,
      { status: { desiredInstances: 9 } },
      "application/merge-patch+json",
    );
    expect(status.status).to.equal(200);
    expect(synced(await loop.run()), "a status-only change is ignored").to.deep.equal([]);
    await cluster.request(
      cluster.admin,
      "PATCH",
      path,
      { metadata: { labels: { "loop-test": "yes", other: "x" } } },
      "application/merge-patch+json",
    );
    expect(synced(await loop.run()), "a label change").to.deep.equal([`${NS}/events`]);

    expect(synced(await loop.advance(29)), "nothing before the resync period").to.deep.equal([]);
    resyncAfter = 7;
    expect(synced(await loop.advance(1)), "the resync period").to.deep.equal([`${NS}/events`]);
    resyncAfter = undefined;
    expect(synced(await loop.advance(6))).to.deep.equal([]);
    expect(synced(await loop.advance(1)), "the hook's resyncAfterSeconds").to.deep.equal([`${NS}/events`]);

    resyncAfter = 3;
    expect(synced(await loop.advance(23)), "the next resync period").to.deep.equal([`${NS}/events`]);
    resyncAfter = undefined;
    const wallClock = Date.parse("2026-11-28T12:00:00Z");
    expect(
      synced(await loop.runInRealTime(50, wallClock)),
      "following the wall clock from here",
    ).to.deep.equal([]);
    expect(synced(await loop.runInRealTime(50, wallClock + 2_999)), "2.999 s later").to.deep.equal([]);
    expect(
      synced(await loop.runInRealTime(50, wallClock + 3_000)),
      "the resync the hook asked for, 3 s of real time later",
    ).to.deep.equal([`${NS}/events`]);
  });
});
