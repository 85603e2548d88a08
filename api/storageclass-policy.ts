// The ValidatingAdmissionPolicy of the default install for cStor StorageClasses: a class that could never
// provision is refused at `kubectl apply`, where its author sees the message, instead of leaving every PVC of it
// Pending. The hooks judge the same rules again (lib/provision/parameters.ts) for classes stored before the
// policy, or where it is not installed. `npm run generate` writes it to metacontroller/base/storageclass-policy.yaml.
import { LIMITS, PROVISIONING } from "./constants.js";

const NAME = "cstor-storage-class";
const LABEL = `'${PROVISIONING.classLabel}'`;
const list = (values: readonly string[]): string => `[${values.map((v) => `'${v}'`).join(", ")}]`;
/** The class's value of our label, '' when it has none. */
const labelOf = (object: string): string =>
  `(has(${object}.metadata.labels) && ${LABEL} in ${object}.metadata.labels ? ${object}.metadata.labels[${LABEL}] : '')`;
const where = "'StorageClass ' + object.metadata.name";
const replace =
  "' (a class\\'s provisioner and parameters cannot be edited: fix the manifest and apply it again)'";

export function storageClassPolicy(): object[] {
  const p = "variables.parameters";
  const validations = [
    {
      expression: "!variables.ours || variables.labelled",
      messageExpression: `${where} + ' has provisioner ${PROVISIONING.provisioner} but not the label ${PROVISIONING.classLabel}: "${PROVISIONING.classLabelValue}": add the label, or no volume is ever made for its claims'`,
    },
    {
      expression: "!variables.labelled || variables.ours",
      messageExpression: `${where} + ' carries the label ${PROVISIONING.classLabel} but its provisioner is ' + object.provisioner + ': remove the label, or use provisioner ${PROVISIONING.provisioner}'`,
    },
    {
      expression: `!variables.ours || ${p}.all(k, k in ${list(PROVISIONING.parameters)})`,
      messageExpression: `${where} + ': parameters ' + ${p}.filter(k, !(k in ${list(PROVISIONING.parameters)})).join(', ') + ' are not cStor parameters (they are ${PROVISIONING.parameters.join(", ")})' + ${replace}`,
    },
    {
      expression: `!variables.ours || ('cstorPoolCluster' in ${p} && ${p}.cstorPoolCluster.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$'))`,
      messageExpression: `${where} + ': parameters.cstorPoolCluster is missing or not a name: write the CStorPoolCluster whose pools hold the volumes, "<name>" (in openebs) or "<namespace>/<name>"' + ${replace}`,
    },
    {
      expression: `!variables.ours || ('replicaCount' in ${p} && ${p}.replicaCount.matches('^[1-${LIMITS.replicasPerVolume}]$'))`,
      messageExpression: `${where} + ': parameters.replicaCount is ' + ('replicaCount' in ${p} ? '"' + ${p}.replicaCount + '"' : 'missing') + '; write how many pools hold each volume, "1" to "${LIMITS.replicasPerVolume}"' + ${replace}`,
    },
    {
      expression: `!variables.ours || !('fsType' in ${p}) || ${p}.fsType in ${list(PROVISIONING.fsTypes)}`,
      messageExpression: `${where} + ': parameters.fsType is "' + ${p}.fsType + '"; write one of ${PROVISIONING.fsTypes.join(", ")} (default ${PROVISIONING.defaultFsType})' + ${replace}`,
    },
    {
      expression: `!variables.ours || !('cas-type' in ${p}) || ${p}['cas-type'] == '${PROVISIONING.upstreamCasType}'`,
      messageExpression: `${where} + ': parameters.cas-type is "' + ${p}['cas-type'] + '"; only "${PROVISIONING.upstreamCasType}" is served here: remove it or write "${PROVISIONING.upstreamCasType}"' + ${replace}`,
    },
  ].map((v) => ({ ...v, reason: "Invalid" }));
  return [
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name: NAME },
      spec: {
        failurePolicy: "Ignore",
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: ["storage.k8s.io"],
              apiVersions: ["*"],
              operations: ["CREATE", "UPDATE"],
              resources: ["storageclasses"],
            },
          ],
        },
        // Only the label can change after creation. An UPDATE that leaves it alone (Metacontroller's finalizer
        // and annotation writes) is never judged, so a class stored before this policy is still served and let go.
        matchConditions: [
          {
            name: "created-or-relabelled",
            expression: `request.operation == 'CREATE' || ${labelOf("object")} != ${labelOf("oldObject")}`,
          },
        ],
        variables: [
          { name: "ours", expression: `object.provisioner == '${PROVISIONING.provisioner}'` },
          { name: "labelled", expression: `${labelOf("object")} == '${PROVISIONING.classLabelValue}'` },
          { name: "parameters", expression: "has(object.parameters) ? object.parameters : {}" },
        ],
        validations,
      },
    },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name: NAME },
      spec: { policyName: NAME, validationActions: ["Deny"] },
    },
  ];
}
