// The ValidatingAdmissionPolicy of the default install: the refusals that need an object besides the CSPC.
// The CSPC's own CRD rules cannot judge a day-2 edit: the stored spec is not what the pool holds (an expansion
// may wait for its claim, a change may have been refused), and CRD rules cannot see metadata.generation to tell.
// The CSPI is the truth of what a pool holds, so the policy takes the CSPC's CSPIs as params (one evaluation per
// CSPI, selected by label) and judges the edit against each, as lib/cspc/day2-diff.ts does, word for word where it
// can. Removing a pool that holds volumes, and DELETE while a CSPI reports volumes, are refused as the webhook
// refuses them (lib/admission/judge.ts).
// `npm run generate` writes it to metacontroller/base/cspc-policy.yaml; docs/validation.md says what it covers.
import { ANNOTATION, API_VERSION, GROUP, KIND, LABEL } from "./constants.js";

const role = (g: string): string =>
  `(has(${g}.isWriteCache) && ${g}.isWriteCache ? 'writeCache' : has(${g}.isSpare) && ${g}.isSpare ? 'spare' : ` +
  `has(${g}.isReadCache) && ${g}.isReadCache ? 'readCache' : 'data')`;
const STRIPE_ROLES = "['spare', 'readCache']";

/** resolvedType() of lib/rules/pool-spec.ts for a group of the new pool spec; '' when it has none. */
const resolvedType = (g: string): string =>
  `(${role(g)} in ${STRIPE_ROLES} ? 'stripe' : has(${g}.type) ? ${g}.type : ` +
  `has(variables.pool.poolConfig) && has(variables.pool.poolConfig.defaultRaidGroupType) ? variables.pool.poolConfig.defaultRaidGroupType : '')`;

/** describeGroup() of lib/cspc/day2-diff.ts for a CSPI group. */
const describe = (g: string): string =>
  `'(' + (${role(g)} == 'data' ? ${g}.type : ${role(g)} == 'writeCache' ? 'write cache ' + ${g}.type : ` +
  `${role(g)} == 'spare' ? 'spare' : 'read cache') + ': ' + ${g}.blockDevices.map(d, d.blockDeviceName).join(', ') + ')'`;

/** The device d (of the new pool spec) belonged to CSPI group gi. */
const wasIn = (d: string, gi: string): string =>
  `(${d}.blockDeviceName in variables.groupOf && variables.groupOf[${d}.blockDeviceName] == ${gi})`;

// CEL in v1.34 has no cel.bind for admission policies either, so what a group's check needs is computed once per
// CSPI group into variables (lists indexed like params.spec.raidGroups), and the check reads them.
/** Per CSPI group: the indexes of the new groups holding its devices. */
const CARRIERS = `params.spec.raidGroups.transformList(gi, g, variables.pool.raidGroups.transformList(s, ng, ng.blockDevices.exists(d, ${wasIn("d", "gi")}) ? s : -1).filter(s, s >= 0))`;
/** The new group holding CSPI group gi's devices (when there is exactly one). */
const C = "variables.pool.raidGroups[variables.carriers[gi][0]]";
const ONE_CARRIER = "variables.carriers[gi].size() == 1";
const REMOVED = `params.spec.raidGroups.transformList(gi, g, ${ONE_CARRIER} ? g.blockDevices.filter(d, !${C}.blockDevices.exists(x, x.blockDeviceName == d.blockDeviceName)).map(d, d.blockDeviceName) : [])`;
const ADDED = `params.spec.raidGroups.transformList(gi, g, ${ONE_CARRIER} ? ${C}.blockDevices.filter(d, !${wasIn("d", "gi")}).map(d, d.blockDeviceName) : [])`;
/** Per CSPI group: how many CSPI groups its new group takes devices from. */
const MERGED = `params.spec.raidGroups.transformList(gi, g, ${ONE_CARRIER} ? params.spec.raidGroups.transformList(oi, og, ${C}.blockDevices.exists(d, ${wasIn("d", "oi")}) ? 1 : 0).sum() : 0)`;

const LABEL_OF_G = `'raidGroups[' + string(variables.carriers[gi][0]) + '] ' + ${describe("g")}`;
const removed = "variables.removed[gi]";
const added = "variables.added[gi]";

/** The problem of CSPI group g (index gi) whose devices are in one new group, '' when none. */
const CHANGED_GROUP_PROBLEM =
  `variables.merged[gi] > 1 ? 'raidGroups[' + string(variables.carriers[gi][0]) + '] holds devices of ' + string(variables.merged[gi]) + ' existing raid groups; ` +
  `raid groups cannot be merged or devices moved between them: restore the groups as they were' : ` +
  `${role(C)} != ${role("g")} ? ${LABEL_OF_G} + ' changed from ' + ${role("g")} + ' to ' + ${role(C)} + ` +
  `'; a group\\'s role cannot change: restore it, and add a new group for the new role' : ` +
  `${resolvedType(C)} != g.type ? ${LABEL_OF_G} + ' changed type from ' + g.type + ' to ' + ` +
  `(${resolvedType(C)} == '' ? '(none)' : ${resolvedType(C)}) + '; ZFS cannot convert a raid group: restore type ' + g.type + ` +
  `(has(${C}.type) ? '' : ' (the group has no type, so poolConfig.defaultRaidGroupType decides it: set raidGroups[].type explicitly)') : ` +
  // Spares and read caches hold no data: devices may leave them (zpool remove) and join them freely.
  `${role("g")} in ${STRIPE_ROLES} || ${removed}.size() == 0 && g.type == 'stripe' ? '' : ` +
  `g.type == 'stripe' ? (${added}.size() > 0 ? ${LABEL_OF_G} + ': replacing ' + ${removed}.join(', ') + ' with ' + ${added}.join(', ') + ` +
  `' is not possible in a stripe group, which has no redundancy to rebuild from: restore ' + ${removed}.join(', ') + ` +
  `'; to retire a failing stripe device, move the volumes away and remove the pool' : ` +
  `${LABEL_OF_G} + ': block device ' + ${removed}.join(', ') + ' was removed; data on it would be lost: put it back') : ` +
  `${removed}.size() == 0 && ${added}.size() > 0 ? ${LABEL_OF_G} + ': adding ' + ${added}.join(', ') + ' to a ' + g.type + ` +
  `' group is not supported; ZFS cannot widen it: add a new raid group of the same type and size instead' : ` +
  `${removed}.size() > 0 && ${added}.size() == 0 ? ${LABEL_OF_G} + ': block device ' + ${removed}.join(', ') + ' was removed; a ' + g.type + ` +
  `' group keeps its width: put it back, or replace it with another device' : ` +
  `${removed}.size() > 1 || ${added}.size() > 1 ? ${LABEL_OF_G} + ': ' + string(${removed}.size()) + ' devices replaced at once (' + ${removed}.join(', ') + ` +
  `'); one replacement per raid group at a time keeps the group\\'s redundancy: replace one, wait for its resilver, then the next' : ''`;

/** The problem of CSPI group g (index gi): gone, split, or changed (above). */
const GROUP_PROBLEM =
  `variables.carriers[gi].size() == 0 ? (${role("g")} in ${STRIPE_ROLES} ? '' : 'raid group ' + ${describe("g")} + ' was removed; ZFS cannot take a raid group out of a pool ` +
  `without destroying it and its data: put the group back (to retire the whole pool, remove the pool spec)') : ` +
  `variables.carriers[gi].size() > 1 ? 'the devices of existing raid group ' + ${describe("g")} + ' are now spread over raidGroups[' + ` +
  `string(variables.carriers[gi][0]) + '] and raidGroups[' + string(variables.carriers[gi][1]) + ']; a raid group cannot be split: restore it' : ` +
  `${CHANGED_GROUP_PROBLEM}`;

/** poolLabel() of lib/rules/pool-spec.ts (nodeSelector keys in the API server's order) and the CSPI's name. */
const LIVE_LABEL =
  `'spec.pools[' + string(variables.poolIndex) + '] (nodeSelector ' + ` +
  `variables.pool.nodeSelector.map(k, k + '=' + variables.pool.nodeSelector[k]).join(',') + ') (pool ' + params.metadata.name + '): '`;

// The count half of lib/rules/held-volumes.ts (the params are CSPIs; the webhook and the hooks also count the
// CStorVolumeReplicas that name a pool): a pool holds volumes unless its node daemon reported 0 replicas.
const COUNT_KNOWN = "has(params.status) && has(params.status.provisionedReplicas)";
const HOLDS_NONE = `(${COUNT_KNOWN} && params.status.provisionedReplicas == 0)`;
/** heldVolumesFix() of lib/rules/held-volumes.ts for an unknown count. */
const UNKNOWN_FIX =
  `'bring the node daemon on ' + params.spec.hostName + ' back so it reports the count; if the node is gone for good and no volume ` +
  `was ever on the pool, record that by hand: kubectl patch cspi ' + params.metadata.name + ' -n ' + params.metadata.namespace + ` +
  `' --subresource=status --type=merge -p \\'{"status":{"provisionedReplicas":0}}\\''`;
/** heldPredicate() of lib/rules/held-volumes.ts, from the CSPI alone. */
const HELD_PREDICATE =
  `(${COUNT_KNOWN} ? 'holds ' + string(params.status.provisionedReplicas) + ` +
  `(params.status.provisionedReplicas == 1 ? ' volume replica' : ' volume replicas') + ' (as its node daemon reports)' : ` +
  `'may hold volumes: the replica count is unknown (the node daemon has not reported it)')`;
/** describeHeld() of lib/rules/held-volumes.ts. */
const HELD = `'pool ' + params.metadata.name + ' on node ' + params.spec.hostName + ' ' + ${HELD_PREDICATE}`;
/** heldWithFix() of lib/admission/judge.ts. */
const HELD_WITH_FIX = `${HELD} + (${COUNT_KNOWN} ? '' : ' (' + ${UNKNOWN_FIX} + ')')`;

// Finding the CSPI's pool spec. Looking through every pool for each CSPI made an edit of a CSPC of N pools cost
// N x N pool comparisons (22 s at 1,000 pools); cspc-sync records each pool's index on its CSPI, and the policy
// looks there first, then one place before and after it (a pool removed or inserted before this one, in the edit
// being judged), and through every pool only when none of those is the CSPI's pool
// (docs/adr/0046-the-cspc-policy-finds-a-cspis-pool-by-a-recorded-index.md).
const POOLS = "object.spec.pools";
/** Pool spec p is this CSPI's, as cspc-sync matches them: the same nodeSelector and a device in common. */
const isOurs = (p: string): string =>
  `has(${p}.nodeSelector) && has(${p}.raidGroups) && ${p}.nodeSelector == params.spec.nodeSelector && ` +
  `${p}.raidGroups.exists(g, g.blockDevices.exists(d, d.blockDeviceName in variables.groupOf))`;
/** Index i (an int expression) is a pool of the new spec and it is this CSPI's. */
const oursAt = (i: string): string => `(${i} >= 0 && ${i} < ${POOLS}.size() && ${isOurs(`${POOLS}[${i}]`)})`;
const HINT_KEY = `params.metadata.annotations['${ANNOTATION.poolIndex}']`;

/** What the validations read, evaluated once per CSPI (param) when first read. */
const VARIABLES = [
  {
    name: "ours",
    expression:
      `has(params.metadata.labels) && '${LABEL.cspc}' in params.metadata.labels && ` +
      `params.metadata.labels['${LABEL.cspc}'] == oldObject.metadata.name`,
  },
  // Device name -> index of its group in the CSPI (the hook never lists a device twice in a CSPI).
  {
    name: "groupOf",
    expression:
      "params.spec.raidGroups.transformMapEntry(gi, g, g.blockDevices.transformMapEntry(di, d, {d.blockDeviceName: gi}))",
  },
  // Where cspc-sync last saw this CSPI's pool (ANNOTATION.poolIndex), -1 when it says nothing usable.
  {
    name: "hint",
    expression:
      `has(params.metadata.annotations) && '${ANNOTATION.poolIndex}' in params.metadata.annotations && ` +
      `${HINT_KEY}.matches('^[0-9]{1,6}$') ? int(${HINT_KEY}) : -1`,
  },
  // Every pool spec of this CSPI, looked for in all of them (evaluated only when the hint misses).
  {
    name: "scan",
    expression: `${POOLS}.transformList(i, p, ${isOurs("p")} ? i : -1).filter(i, i >= 0)`,
  },
  // The new pool spec of this CSPI, as cspc-sync matches it: same nodeSelector and a device in common.
  // (A pool whose nodeSelector changes migrates; it is left to the webhook and cspc-sync.)
  {
    name: "matches",
    expression:
      `variables.hint < 0 ? variables.scan : ${oursAt("variables.hint")} ? [variables.hint] : ` +
      `${oursAt("variables.hint - 1")} ? [variables.hint - 1] : ` +
      `${oursAt("variables.hint + 1")} ? [variables.hint + 1] : variables.scan`,
  },
  {
    name: "live",
    expression:
      "request.operation == 'UPDATE' && variables.ours && has(object.spec) && variables.matches.size() == 1",
  },
  { name: "poolIndex", expression: "variables.matches[0]" },
  { name: "pool", expression: "object.spec.pools[variables.poolIndex]" },
  { name: "carriers", expression: CARRIERS },
  { name: "removed", expression: REMOVED },
  { name: "added", expression: ADDED },
  { name: "merged", expression: MERGED },
  {
    name: "problems",
    expression: `params.spec.raidGroups.transformList(gi, g, ${GROUP_PROBLEM}).filter(m, m != '')`,
  },
];

export const CSPC_POLICY_NAME = "cstor-pool-cluster-safety";

export function cspcPolicy(): object[] {
  const policy = {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicy",
    metadata: { name: CSPC_POLICY_NAME },
    spec: {
      // An error in the policy (none is expected) lets the request through to cspc-sync and cspc-finalize,
      // which refuse the same changes; Fail would block every CSPC edit, including the one that fixes things.
      failurePolicy: "Ignore",
      paramKind: { apiVersion: API_VERSION, kind: KIND.cspi },
      // Labels, annotations and finalizers (Metacontroller's among them) are never judged, as in the webhook:
      // a stored spec cspc-sync refuses must not block them. The API server evaluates match conditions once per
      // param (CSPI), so this one compares generations, which it has already moved on for any change outside
      // metadata and status, rather than the specs (a walk through every pool, for each CSPI).
      matchConditions: [
        {
          name: "spec-changed-or-delete",
          expression:
            "request.operation == 'DELETE' || !has(object.spec) || !has(oldObject.spec) || " +
            "(has(object.metadata.generation) && has(oldObject.metadata.generation) ? " +
            "object.metadata.generation != oldObject.metadata.generation : object.spec != oldObject.spec)",
        },
      ],
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: [GROUP],
            apiVersions: ["*"],
            operations: ["UPDATE", "DELETE"],
            resources: ["cstorpoolclusters"],
          },
        ],
      },
      variables: VARIABLES,
      validations: [
        {
          expression: `request.operation != 'DELETE' || !variables.ours || ${HOLDS_NONE}`,
          messageExpression:
            `'CStorPoolCluster ' + oldObject.metadata.namespace + '/' + oldObject.metadata.name + ` +
            `' cannot be deleted while its pools hold volumes: ' + ${HELD_WITH_FIX} + '. Deleting it would destroy those pools and every volume on them: ` +
            `move or delete those volumes first, then delete the CStorPoolCluster'`,
          reason: "Forbidden",
        },
        {
          // No pool spec has any of its devices while its replica count is unknown: refused. With a known count the
          // webhook and cspc-sync judge the replicas (the replicas those CVRs name move, docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md; other data holds the pool).
          expression:
            `request.operation != 'UPDATE' || !variables.ours || ${COUNT_KNOWN} || !has(object.spec) || ` +
            "variables.matches.size() > 0 || " +
            "object.spec.pools.exists(p, has(p.raidGroups) && p.raidGroups.exists(g, g.blockDevices.exists(d, d.blockDeviceName in variables.groupOf)))",
          messageExpression:
            `'spec.pools no longer lists pool ' + params.metadata.name + ' (node ' + params.spec.hostName + '), which ' + ${HELD_PREDICATE} + ` +
            `': removing it would destroy them; put its pool spec back, or ' + ${UNKNOWN_FIX}`,
          reason: "Invalid",
        },
        {
          expression: "!variables.live || variables.problems.size() == 0",
          messageExpression: `variables.problems.map(m, ${LIVE_LABEL} + m).join('; ')`,
          reason: "Invalid",
        },
      ],
    },
  };
  const binding = {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicyBinding",
    metadata: { name: CSPC_POLICY_NAME },
    spec: {
      policyName: CSPC_POLICY_NAME,
      validationActions: ["Deny"],
      // Every CSPI of the CSPC's namespace that belongs to some CSPC; the policy keeps those of this CSPC.
      // Pools on device sets are judged by the webhook and cspc-sync only: their devices are PVCs named
      // from the sets, which this policy's device matching does not know (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md).
      paramRef: {
        selector: {
          matchExpressions: [
            { key: LABEL.cspc, operator: "Exists" },
            { key: LABEL.onDeviceSets, operator: "DoesNotExist" },
          ],
        },
        parameterNotFoundAction: "Allow",
      },
    },
  };
  return [policy, binding];
}
