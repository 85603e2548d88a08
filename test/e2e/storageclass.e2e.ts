// Opt-in (npm run test:e2e): the StorageClass path under the real Metacontroller, which the default suite's
// emulator plays: a DecoratorController on a cluster-scoped StorageClass with namespaced (CVC, Event) and
// cluster-scoped (PV) attachments, and the PVCs and CStorVolumes as related objects whose changes must bring
// a sync. Real: Metacontroller (METACONTROLLER_BIN), kube-apiserver + etcd, kube-controller-manager's PV
// controllers, and the hook server process. Played by the test: the cvc-sync hook's part (the CVC Bound, its
// CStorVolume's target address). Each step waits for Metacontroller alone, with no sync asked by the test.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { parse } from "yaml";
import { API_VERSION, KIND, PROVISIONING } from "../../api/constants.js";
import { HookServerProcess } from "../../testkit/hook-server-process.js";
import {
  installProject,
  INSTALL_NAMESPACE,
  ownCluster,
  repoPath,
  waitUntil,
  type KubeCluster,
} from "../../testkit/kube.js";
import {
  MetacontrollerProcess,
  pointHooksAt,
  realMetacontrollerFromEnv,
} from "../../testkit/real-metacontroller.js";

type Obj = Record<string, any>;
const NS = "shop";
const WAIT_MS = 60_000;
const SAMPLE_CLASS = parse(
  readFileSync(repoPath("metacontroller/samples/volumes/storageclass-cstor.yaml"), "utf8"),
) as Obj;

describe("e2e: from a StorageClass to a Bound volume under the real Metacontroller", function () {
  this.timeout(10 * 60_000);
  let cluster: KubeCluster;
  let hooks: HookServerProcess;
  let metacontroller: MetacontrollerProcess;

  const get = async (path: string): Promise<Obj | undefined> => {
    const response = await cluster.request(cluster.admin, "GET", path);
    return response.status === 200 ? (response.body as Obj) : undefined;
  };
  const waitFor = async (what: string, check: () => Promise<boolean>) =>
    waitUntil(check, WAIT_MS, () => `never: ${what}\n${metacontroller.tail()}`);
  const cvcPath = (name: string) =>
    `/apis/${API_VERSION}/namespaces/${INSTALL_NAMESPACE}/cstorvolumeconfigs/${name}`;

  before(async function () {
    const real = realMetacontrollerFromEnv();
    cluster = await ownCluster({
      controllers: [
        "persistentvolume-binder",
        "persistentvolume-expander",
        "pvc-protection",
        "pv-protection",
      ],
    });
    await installProject(cluster);
    await cluster.kubectl(["apply", "--server-side", "-f", real.crds]);
    hooks = await HookServerProcess.start(cluster, INSTALL_NAMESPACE);
    await pointHooksAt(cluster, hooks.url);
    await cluster.kubectl(["create", "namespace", NS]);
    await cluster.kubectl([
      "apply",
      "--server-side",
      "-f",
      repoPath("metacontroller/samples/cspc-mirror.yaml"),
    ]);
    metacontroller = await MetacontrollerProcess.start(real.bin, cluster.admin.kubeconfig);
    await cluster.kubectl([
      "apply",
      "--server-side",
      "-f",
      repoPath("metacontroller/samples/volumes/storageclass-cstor.yaml"),
    ]);
  });

  after(async () => {
    await metacontroller?.stop();
    await hooks?.stop();
  });

  it("a PVC becomes a CVC, then a PV kube-controller-manager binds; deleting it deletes both; Metacontroller logs no error", async () => {
    await waitFor("the class gets Metacontroller's finalizer and reads ready", async () => {
      const sc = await get(`/apis/storage.k8s.io/v1/storageclasses/${SAMPLE_CLASS.metadata.name}`);
      return (
        Boolean(
          sc?.metadata.finalizers?.includes("metacontroller.io/decoratorcontroller-cstor-storage-class"),
        ) && sc?.metadata.annotations?.[PROVISIONING.classAnnotation] === "ready"
      );
    });
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: "data", namespace: NS },
        spec: {
          accessModes: ["ReadWriteOnce"],
          storageClassName: SAMPLE_CLASS.metadata.name,
          resources: { requests: { storage: "1Gi" } },
        },
      }),
    });
    const uid = (await get(`/api/v1/namespaces/${NS}/persistentvolumeclaims/data`))!.metadata.uid as string;
    const volume = `pvc-${uid}`;
    // The PVC is a related object: its annotation by kube-controller-manager brings the sync.
    await waitFor("a CVC for the PVC", async () => (await get(cvcPath(volume))) !== undefined);

    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: JSON.stringify({
        apiVersion: API_VERSION,
        kind: KIND.cv,
        metadata: { name: volume, namespace: INSTALL_NAMESPACE },
        spec: {
          capacity: "1Gi",
          targetIP: "10.96.0.41",
          targetPort: "3260",
          targetPortal: "10.96.0.41:3260",
          iqn: `iqn.2016-09.com.openebs.cstor:${volume}`,
          replicationFactor: 3,
          consistencyFactor: 2,
          desiredReplicationFactor: 3,
        },
      }),
    });
    await cluster.request(
      cluster.admin,
      "PATCH",
      `${cvcPath(volume)}/status`,
      { status: { phase: "Bound", capacity: "1Gi" } },
      "application/merge-patch+json",
    );
    await waitFor(
      "the PVC Bound to its PV",
      async () =>
        (await get(`/api/v1/namespaces/${NS}/persistentvolumeclaims/data`))?.status?.phase === "Bound",
    );
    const pv = (await get(`/api/v1/persistentvolumes/${volume}`))!;
    expect(pv.spec.iscsi).to.include({ targetPortal: "10.96.0.41:3260", lun: 0 });
    expect(pv.metadata.ownerReferences[0]).to.include({ kind: "StorageClass", controller: true });

    await cluster.kubectl(["delete", "pvc", "-n", NS, "data", "--wait=false"]);
    await waitFor(
      "the PV and the CVC deleted",
      async () => !(await get(`/api/v1/persistentvolumes/${volume}`)) && !(await get(cvcPath(volume))),
    );
    expect(
      metacontroller.errors().map((l) => JSON.stringify(l)),
      "Metacontroller's log at error level",
    ).to.deep.equal([]);
    expect(hooks.refusals(), "the hook server's refused or failed requests").to.deep.equal([]);
  });
});
