// The real Metacontroller, for the opt-in suite (npm run test:e2e). No registry reachable from CI serves it, and
// nothing of it may live in this repository, so the binary and its CRD manifests come from the environment:
// METACONTROLLER_BIN and METACONTROLLER_CRDS. It runs out of cluster against the test's apiserver, with the
// arguments of its production StatefulSet plus what running outside a pod needs (a kubeconfig, loopback ports).
import { existsSync } from "node:fs";
import { freePorts, waitUntil, type KubeCluster } from "./kube.js";
import { LoggedProcess, type LogLine } from "./logged-process.js";

export const METACONTROLLER_VERSION = "v4.17.2";

export const HOW_TO_RUN = `The real-Metacontroller suite needs a Metacontroller ${METACONTROLLER_VERSION} binary and its CRDs:
  METACONTROLLER_BIN=/path/to/metacontroller \\
  METACONTROLLER_CRDS=/path/to/metacontroller/manifests/production/metacontroller-crds-v1.yaml \\
  npm run test:e2e
Build the binary from Metacontroller's source at tag ${METACONTROLLER_VERSION} (go build ./pkg/cmd/metacontroller);
the CRDs are manifests/production/metacontroller-crds-v1.yaml of the same checkout. See docs/install.md.`;

export interface RealMetacontroller {
  bin: string;
  crds: string;
}

export class NotConfigured extends Error {
  override readonly name = "NotConfigured";
}

/** The binary and CRDs named by the environment; NotConfigured (with HOW_TO_RUN) when either is missing. */
export function realMetacontrollerFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
): RealMetacontroller {
  const bin = env.METACONTROLLER_BIN?.trim();
  const crds = env.METACONTROLLER_CRDS?.trim();
  const problems = [
    !bin
      ? "METACONTROLLER_BIN is not set"
      : !existsSync(bin)
        ? `METACONTROLLER_BIN=${bin} does not exist`
        : undefined,
    !crds
      ? "METACONTROLLER_CRDS is not set"
      : !existsSync(crds)
        ? `METACONTROLLER_CRDS=${crds} does not exist`
        : undefined,
  ].filter(Boolean);
  if (problems.length > 0) throw new NotConfigured(`${problems.join("; ")}.\n${HOW_TO_RUN}`);
  return { bin: bin!, crds: crds! };
}

/**
 * Points every hook of our CompositeController and DecoratorController at `baseUrl` (path kept), as the
 * in-cluster Service would route it. Done before Metacontroller starts, so it never calls the Service's DNS name.
 */
export async function pointHooksAt(cluster: KubeCluster, baseUrl: string): Promise<void> {
  for (const resource of ["compositecontrollers", "decoratorcontrollers"]) {
    const path = `/apis/metacontroller.k8s.io/v1alpha1/${resource}`;
    const { body } = await cluster.request(cluster.admin, "GET", path);
    for (const controller of body.items) {
      const hooks = Object.fromEntries(
        Object.entries(
          controller.spec.hooks as Record<
            string,
            { version?: string; webhook: { path?: string; url?: string; timeout?: string } }
          >,
        ).map(([name, hook]) => {
          const hookPath = hook.webhook.url ? new URL(hook.webhook.url).pathname : (hook.webhook.path ?? "/");
          const webhook = {
            url: new URL(hookPath, baseUrl).toString(),
            ...(hook.webhook.timeout ? { timeout: hook.webhook.timeout } : {}),
          };
          return [name, { ...hook, webhook }];
        }),
      );
      const patched = await cluster.request(
        cluster.admin,
        "PATCH",
        `${path}/${controller.metadata.name}`,
        [{ op: "replace", path: "/spec/hooks", value: hooks }],
        "application/json-patch+json",
      );
      if (patched.status !== 200)
        throw new Error(
          `pointing ${controller.metadata.name}'s hooks at ${baseUrl}: ${patched.status} ${JSON.stringify(patched.body)}`,
        );
    }
  }
}

export class MetacontrollerProcess extends LoggedProcess {
  private constructor(file: string, args: string[]) {
    super("metacontroller", file, args, {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root" },
    });
  }

  /** Starts Metacontroller as `kubeconfig`'s user; resolves once both our controllers have started. */
  static async start(bin: string, kubeconfig: string): Promise<MetacontrollerProcess> {
    const [metricsPort, healthPort] = await freePorts(2);
    const args = [
      // As manifests/production/metacontroller.yaml runs it.
      "--zap-log-level=4",
      "--discovery-interval=20s",
      // Out of cluster: no in-cluster token, and ports of its own on a host shared with other runs.
      `--kubeconfig=${kubeconfig}`,
      `--metrics-address=127.0.0.1:${metricsPort}`,
      `--health-probe-bind-address=127.0.0.1:${healthPort}`,
    ];
    const mc = new MetacontrollerProcess(bin, args);
    await waitUntil(
      async () => {
        if (mc.ended()) throw new Error(`metacontroller exited at start: ${mc.tail()}`);
        return ["Starting CompositeController", "Starting DecoratorController"].every((msg) =>
          mc.lines.some((l) => l.msg === msg),
        );
      },
      60_000,
      () => `metacontroller did not start both controllers: ${mc.tail()}`,
    );
    return mc;
  }

  /** What it logged at error level: a failed hook call, a response it refused to decode, a failed sync ("failed to sync …"). */
  errors(): LogLine[] {
    return this.lines.filter((l) => l.level === "error");
  }
}
