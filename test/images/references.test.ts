// The images the install names and the images the Dockerfile builds are the same ones
// (docs/adr/0049-the-images-built-by-buildah-from-the-dockerfile.md): every reference the rendered overlays hold
// (containers, and the hook server's settings for the pool and target pods) and the hooks' defaults is an image
// `npm run images` builds, with the package version; every image it builds is named there. The checker
// (scripts/image-plan.ts) on broken inputs, and the inputs that decide whether a build is needed.
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { DEFAULT_HOOK_CONFIG } from "../../lib/hook-config.js";
import {
  imagePlan,
  partitionReferences,
  readImagePlan,
  unbuiltReferences,
} from "../../scripts/image-plan.js";
import { buildInputs } from "../../scripts/images.js";
import { REPO_ROOT } from "../../testkit/kube.js";
import { namedImages, renderOverlay } from "../support/images.js";

const OVERLAYS = [
  "metacontroller/default",
  "metacontroller/cert-manager",
  "metacontroller/manual-tls",
  "metacontroller/monitoring",
];

const DOCKERFILE = `# syntax=docker/dockerfile:1
FROM node:24-bookworm-slim AS build
COPY package.json ./
COPY lib lib
RUN npm run build

FROM node:24-bookworm-slim AS runtime
COPY --from=build /src/dist dist

FROM runtime AS hooks
LABEL org.opencontainers.image.title="cstor-pool-hooks" \\
      org.opencontainers.image.description="the hook server"
ENTRYPOINT ["node", "dist/hooks/main.js"]

FROM runtime AS csi-driver
ENTRYPOINT ["node", "dist/csi/main.js"]
`;

const KUSTOMIZATION = `images:
  - {name: cstor-pool-hooks, newName: ghcr.io/cstor-pool-operator/cstor-pool-hooks, newTag: 0.1.0}
  - {name: cstor-pool-agent, newName: ghcr.io/cstor-pool-operator/cstor-pool-agent, newTag: 0.1.0}
`;

describe("images: what the install names is what the Dockerfile builds", function () {
  this.timeout(60_000);

  it("every image the overlays and the hooks' defaults name is built by npm run images, with the package version", () => {
    const plan = readImagePlan(REPO_ROOT);
    expect(plan.problems).to.deep.equal([]);
    const defaults = [DEFAULT_HOOK_CONFIG.poolPod.poolImage, DEFAULT_HOOK_CONFIG.volumeTarget.image];
    expect(unbuiltReferences(defaults, plan.images), "the hooks' defaults").to.deep.equal([]);
    for (const overlay of OVERLAYS) {
      const { ours, unpinned } = partitionReferences(namedImages(renderOverlay(overlay)));
      expect(unbuiltReferences(ours, plan.images), overlay).to.deep.equal([]);
      expect(unpinned, `${overlay}: upstream images pinned to a release`).to.deep.equal([]);
    }
  });

  it("names the CSI sidecars from the Kubernetes project's registry, each pinned to a release", () => {
    const { upstream, unpinned } = partitionReferences(
      namedImages(renderOverlay("metacontroller/default")).concat(
        "registry.k8s.io/sig-storage/csi-attacher:latest",
      ),
    );
    expect(upstream.map((r) => r.replace(/:.*$/, ""))).to.include.members([
      "registry.k8s.io/sig-storage/csi-provisioner",
      "registry.k8s.io/sig-storage/csi-attacher",
      "registry.k8s.io/sig-storage/csi-resizer",
      "registry.k8s.io/sig-storage/csi-snapshotter",
      "registry.k8s.io/sig-storage/csi-node-driver-registrar",
      "registry.k8s.io/sig-storage/livenessprobe",
    ]);
    expect(unpinned, "a tag that is no release is refused").to.deep.equal([
      "registry.k8s.io/sig-storage/csi-attacher:latest",
    ]);
  });

  it("every image the Dockerfile builds is named by metacontroller/default, each of them once", () => {
    const plan = readImagePlan(REPO_ROOT);
    const named = partitionReferences(namedImages(renderOverlay("metacontroller/default"))).ours;
    expect(plan.images.map((image) => image.reference).sort()).to.deep.equal([...new Set(named)].sort());
    expect(
      plan.images.map((image) => image.stage),
      "the stages other stages build on are no images",
    ).to.not.include.members(["build", "runtime"]);
  });

  it("refuses an image stage without a name, an entry no stage builds and a tag that is not the version, and lists unbuilt references", () => {
    const plan = imagePlan(DOCKERFILE, KUSTOMIZATION, "0.2.0");
    expect(plan.problems).to.deep.equal([
      "metacontroller/default/kustomization.yaml images: cstor-pool-hooks has newTag 0.1.0, but npm run images tags the images with the package version: set newTag: 0.2.0",
      'Dockerfile stage "csi-driver" is an image (no other stage builds on it) but has no LABEL org.opencontainers.image.title: give it the image\'s name, e.g. LABEL org.opencontainers.image.title="cstor-csi-driver", and list that name in metacontroller/default/kustomization.yaml images:',
      'metacontroller/default/kustomization.yaml images: names cstor-pool-agent, which no Dockerfile stage builds: give the stage that builds it LABEL org.opencontainers.image.title="cstor-pool-agent", or remove the entry',
    ]);
    expect(plan.bases).to.deep.equal(["node:24-bookworm-slim"]);
    expect(plan.contextSources).to.deep.equal(["lib", "package.json"]);
    expect(plan.copiedStages, "kept as the next build's cache").to.deep.equal(["build"]);

    const good = imagePlan(
      DOCKERFILE.replace(/FROM runtime AS csi-driver[^]*$/, ""),
      KUSTOMIZATION.split("\n").slice(0, 2).join("\n"),
      "0.1.0",
    );
    expect(good.problems).to.deep.equal([]);
    expect(good.images).to.deep.equal([
      {
        stage: "hooks",
        name: "cstor-pool-hooks",
        reference: "ghcr.io/cstor-pool-operator/cstor-pool-hooks:0.1.0",
      },
    ]);
    expect(
      unbuiltReferences(
        [
          "ghcr.io/cstor-pool-operator/cstor-pool-hooks:0.1.0",
          "cstor-pool-agent",
          "ghcr.io/cstor-pool-operator/cstor-pool-hooks:0.0.9",
        ],
        good.images,
      ),
    ).to.deep.equal(["cstor-pool-agent", "ghcr.io/cstor-pool-operator/cstor-pool-hooks:0.0.9"]);
  });

  it("builds again when a file the Dockerfile copies or the base changes, not for a file it does not copy", () => {
    const root = mkdtempSync(join(tmpdir(), "cstor-image-inputs-"));
    try {
      cpSync(join(REPO_ROOT, "Dockerfile"), join(root, "Dockerfile"));
      cpSync(join(REPO_ROOT, ".dockerignore"), join(root, ".dockerignore"));
      const plan = readImagePlan(REPO_ROOT);
      for (const source of plan.contextSources)
        cpSync(join(REPO_ROOT, source), join(root, source), {
          recursive: true,
          filter: (path) => !path.includes("node_modules"),
        });
      const inputs = () => buildInputs(root, plan, ["sha256:base"]);
      const before = inputs();
      writeFileSync(join(root, "README.md"), "not copied by the Dockerfile\n");
      expect(inputs(), "a file no COPY takes").to.equal(before);
      writeFileSync(join(root, "lib", "new-module.ts"), "export const x = 1;\n");
      expect(inputs(), "a new file under a copied folder").to.not.equal(before);
      rmSync(join(root, "lib", "new-module.ts"));
      expect(inputs(), "taken back").to.equal(before);
      expect(buildInputs(root, plan, ["sha256:another-base"]), "another base").to.not.equal(before);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
