// Golden files: test/fixtures/<area>/<case>/ holds the inputs, the expected outputs and case.yaml
// ({description, now}). An input is a whole file (request.yaml) or a shared world plus a small patch
// (request.patch.yaml, see test/fixtures/README.md); `read` gives the document either way. Outputs are
// always whole files, compared after canonicalisation (sorted keys, no nulls). UPDATE_GOLDEN=1 rewrites
// expectations; it is refused under CI so a failure can never be "fixed" there.
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { canonicalize, canonicalYaml } from "../../lib/canonical.js";
import { FIXTURES, hasCaseDocument, readCaseDocument, readYaml } from "../../testkit/case-documents.js";
import { TEST_HOOK_CONFIG } from "../../testkit/hook-config.js";
import { DEFAULT_HOOK_CONFIG, type HookConfig } from "../../lib/hook-config.js";

export { FIXTURES, readYaml };

/** What a case directory of each golden area holds. */
export interface GoldenArea {
  /** Inputs: whole files, or patches of a world (<stem>.patch.yaml). */
  inputs: readonly string[];
  /** Expected outputs, reviewed like code: always whole files. */
  outputs: readonly string[];
  /** What case.yaml may hold besides description and now. */
  caseKeys?: readonly string[];
  /** Further files of a case, named by its inputs (read gives an input document). */
  companions?: (read: (document: string) => unknown) => string[];
}

export const GOLDEN_AREAS: Readonly<Record<string, GoldenArea>> = {
  admission: {
    inputs: ["review.yaml", "lookups.yaml"],
    outputs: ["response.yaml"],
    caseKeys: ["lookupTimeoutMs", "expectedLookups"],
  },
  // events.yaml: the Events the hook server writes on the CSPC after answering (never part of the answer).
  "cspc-sync": { inputs: ["request.yaml"], outputs: ["response.yaml", "events.yaml"] },
  "cspc-finalize": { inputs: ["request.yaml"], outputs: ["response.yaml"] },
  "cspi-sync": { inputs: ["request.yaml"], outputs: ["response.yaml"] },
  "cspi-finalize": { inputs: ["request.yaml"], outputs: ["response.yaml"] },
  // withoutChapKey: true runs the hook as a server without CSTOR_REPLICA_CHAP_KEY (caseHookConfig).
  "cvc-sync": { inputs: ["request.yaml"], outputs: ["response.yaml"], caseKeys: ["withoutChapKey"] },
  "cvc-finalize": { inputs: ["request.yaml"], outputs: ["response.yaml"] },
  "cv-status": { inputs: ["request.yaml"], outputs: ["response.yaml"] },
  // cstor-pool convert (lib/convert/): input.yaml a List of the old objects, output.yaml the CSPCs and notes, or the problems.
  convert: { inputs: ["input.yaml"], outputs: ["output.yaml"] },
  "node-daemon/planner": {
    inputs: ["input.yaml"],
    outputs: ["plan.yaml", "status.yaml"],
    // The zpool output captured on a node, in files beside input.yaml that it names.
    companions: (read) => {
      const input = read("input.yaml") as { zpoolStatus: string; importable?: { listing: string }[] };
      return [input.zpoolStatus, ...(input.importable ?? []).map((entry) => entry.listing)];
    },
  },
  "node-daemon/replicas": {
    inputs: ["input.yaml"],
    outputs: ["plan.yaml", "status.yaml"],
    // The pool's `zfs get -H -p -r -o name,property,value` output, when the pool is imported.
    companions: (read) => {
      const input = read("input.yaml") as { imported?: { zfsGet: string } };
      return input.imported ? [input.imported.zfsGet] : [];
    },
  },
  // The volume target's snapshot pass (volume-target/snapshots.ts): input.yaml the volume, its snapshots and
  // replicas, what md holds; plan.yaml the steps.
  "volume-target/snapshots": { inputs: ["input.yaml"], outputs: ["plan.yaml"] },
};

/** Fixture directories that are no golden area: exactly these files, each read by the tests named. */
export const FIXED_FIXTURES: Readonly<Record<string, readonly string[]>> = {
  // testkit/kube.ts and test/integration/manifests.test.ts apply them to the test apiserver.
  metacontroller: ["README.md", "cert-manager-crds.yaml", "metacontroller-crds.yaml"],
  // test/cli/render.test.ts and test/integration/render.test.ts.
  "render/mirror": ["blockdevices.yaml", "expected.yaml", "nodes.yaml"],
  // test/cli (validate, render, agreement, installed) and the commands of docs/cli.md.
  cli: ["day2-group-removed.yaml", "malformed.yaml", "no-namespace.yaml", "refused-raidz.yaml"],
  "cli/unusable-devices": ["cluster.yaml", "cspc.yaml", "nodes.yaml"],
  // test/cli/views.test.ts, test/integration/views.test.ts and the views' samples in docs/cli.md and docs/operations.md.
  "cli/views": ["cluster.yaml"],
  // test/monitoring/alerts.test.ts: promtool's unit tests of every alert, firing and quiet.
  monitoring: ["alert-tests.yaml"],
  // test/iscsi/initiator.test.ts, test/iscsi/lio.test.ts and test/md/mdadm.test.ts: output and sysfs/configfs
  // trees captured in a user-mode-linux guest (docs/data-path-tests.md).
  kernel: [
    "configfs-lio.yaml",
    "iscsiadm-iface.txt",
    "mdadm-examine-clean.txt",
    "mdadm-examine-degraded.txt",
    "mdadm-examine-mbr.txt",
    "mdadm-examine-recovering.txt",
    "mdadm-examine-spare.txt",
    "sysfs-md-clean.yaml",
    "sysfs-md-degraded.yaml",
    "sysfs-md-recover.yaml",
    "sysfs-md-resync.yaml",
    "sysfs-md-spare.yaml",
    "sysfs-sessions-killed.yaml",
    "sysfs-sessions-up.yaml",
  ],
};

export interface GoldenCase {
  name: string;
  dir: string;
  description: string;
  /** The injected clock of the case. */
  now: Date;
  /** A document of the case: a whole file, or the world its patch names with the patch applied. */
  read(file: string): unknown;
  has(file: string): boolean;
}

export function goldenCases(area: string): GoldenCase[] {
  const root = join(FIXTURES, area);
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const dir = join(root, name);
      const meta = (readYaml(join(dir, "case.yaml")) ?? {}) as { description?: string; now?: string };
      if (!meta.now) throw new Error(`${dir}/case.yaml needs "now" (the clock of the case)`);
      return {
        name,
        dir,
        description: meta.description ?? name,
        now: new Date(meta.now),
        read: (file: string) => readCaseDocument(dir, file),
        has: (file: string) => hasCaseDocument(dir, file),
      };
    });
}

/**
 * The hook configuration a case's hook runs with: the tests' (a fixed CHAP key), or the defaults, without a
 * key, when its case.yaml says `withoutChapKey: true`.
 */
export function caseHookConfig(goldenCase: GoldenCase): HookConfig {
  const meta = (readYaml(join(goldenCase.dir, "case.yaml")) ?? {}) as { withoutChapKey?: unknown };
  return meta.withoutChapKey === true ? DEFAULT_HOOK_CONFIG : TEST_HOOK_CONFIG;
}

export function updatingGolden(): boolean {
  if (process.env.UPDATE_GOLDEN !== "1") return false;
  if (process.env.CI)
    throw new Error("UPDATE_GOLDEN is refused under CI: golden files change only by a reviewed commit");
  return true;
}

/** Compares actual output with <case>/<file>; with UPDATE_GOLDEN=1 (not in CI) writes it instead. */
export function expectGolden(goldenCase: GoldenCase, file: string, actual: unknown): void {
  const path = join(goldenCase.dir, file);
  if (updatingGolden()) {
    writeFileSync(path, canonicalYaml(actual));
    return;
  }
  if (!existsSync(path))
    throw new Error(`missing golden file ${path}: run UPDATE_GOLDEN=1 npm test and review it`);
  expect(canonicalize(actual), `${goldenCase.name}/${file}`).to.deep.equal(canonicalize(readYaml(path)));
}
