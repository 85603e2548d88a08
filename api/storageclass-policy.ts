// The ValidatingAdmissionPolicy of the default install for StorageClasses of the CSI driver: a class whose claims
// the driver would refuse is refused at `kubectl apply`, where its author sees the message, instead of each claim
// of it waiting with a ProvisioningFailed Event. The rules and their words are the driver's own (api/csi-class.ts),
// which it applies again at CreateVolume for a class stored before the policy or where the policy is not
// installed. `npm run generate` writes it to metacontroller/base/storageclass-policy.yaml.
import { CSI, DNS_SUBDOMAIN_PATTERN, LIMITS } from "./constants.js";
import {
  CLASS_PARAMETERS,
  FILESYSTEMS,
  FS_TYPE_PARAMETER,
  KUBERNETES_PARAMETER_PREFIX,
  PARAMETER_FIX,
} from "./csi-class.js";

// The object's name is kept from the StorageClass decorator's policy it replaces, so an upgrade's apply updates
// that policy in place instead of leaving it behind.
const NAME = "cstor-storage-class";

/** A CEL string literal of `text`. */
const cel = (text: string): string => `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
const list = (values: readonly string[]): string => `[${values.map(cel).join(", ")}]`;
const P = "variables.parameters";
/** The parameter's value, '' when it is not given (as the driver reads a missing one). */
const valueOf = (key: string): string => `(${cel(key)} in ${P} ? ${P}[${cel(key)}] : '')`;
const quoted = (value: string): string => `'"' + ${value} + '"'`;
const refusal = (words: string): string => `'StorageClass ' + object.metadata.name + ': ' + ${words}`;
const notEditable = cel(
  " (a class's provisioner and parameters cannot be edited: fix the manifest and apply it again)",
);

/** "1" to "N" with leading zeros, as the driver reads a whole number in range (RE2 cannot count past 9). */
function replicaCountPattern(): string {
  if (LIMITS.replicasPerVolume > 9)
    throw new Error("replicaCountPattern: a bound above 9 needs another pattern");
  return `^0*[1-${LIMITS.replicasPerVolume}]$`;
}

function validations(): object[] {
  const unknown = `!(k in ${list(CLASS_PARAMETERS)}) && !k.startsWith(${cel(KUBERNETES_PARAMETER_PREFIX)})`;
  const poolCluster = `${valueOf("cstorPoolCluster")}.trim()`;
  const replicaCount = `${valueOf("replicaCount")}.trim()`;
  return [
    {
      expression: `!${P}.exists(k, ${unknown})`,
      messageExpression: refusal(
        `'parameters ' + ${P}.filter(k, ${unknown}).join(', ') + ' ' + ${cel(PARAMETER_FIX.unknown)} + ${notEditable}`,
      ),
    },
    {
      expression: `${poolCluster}.matches(${cel(DNS_SUBDOMAIN_PATTERN)}) && ${poolCluster}.size() <= ${LIMITS.cspcNameLength}`,
      messageExpression: refusal(
        `'parameters.cstorPoolCluster is ' + ${quoted(valueOf("cstorPoolCluster"))} + ': ' + ${cel(PARAMETER_FIX.cstorPoolCluster)} + ${notEditable}`,
      ),
    },
    {
      expression: `${replicaCount}.matches(${cel(replicaCountPattern())})`,
      messageExpression: refusal(
        `'parameters.replicaCount is ' + ${quoted(valueOf("replicaCount"))} + ': ' + ${cel(PARAMETER_FIX.replicaCount)} + ${notEditable}`,
      ),
    },
    {
      expression: `${valueOf(FS_TYPE_PARAMETER)} in ${list(["", ...FILESYSTEMS])}`,
      messageExpression: refusal(
        `'parameters.${FS_TYPE_PARAMETER} is ' + ${quoted(valueOf(FS_TYPE_PARAMETER))} + ', which no node makes: ' + ${cel(PARAMETER_FIX.fsType)} + ${notEditable}`,
      ),
    },
  ].map((v) => ({ ...v, reason: "Invalid" }));
}

export function storageClassPolicy(): object[] {
  return [
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name: NAME },
      spec: {
        // Early feedback, as the CSPC policy: the driver judges every class again when it provisions.
        failurePolicy: "Ignore",
        // A class's provisioner and parameters cannot change, so creation is the one moment to judge them; the
        // class's later updates (labels, annotations) are never refused.
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: ["storage.k8s.io"],
              apiVersions: ["*"],
              operations: ["CREATE"],
              resources: ["storageclasses"],
            },
          ],
        },
        matchConditions: [
          { name: "csi-driver-class", expression: `object.provisioner == ${cel(CSI.driverName)}` },
        ],
        variables: [{ name: "parameters", expression: "has(object.parameters) ? object.parameters : {}" }],
        validations: validations(),
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
