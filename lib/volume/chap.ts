// A volume's iSCSI CHAP credentials (docs/adr/0040-the-target-agent-credentials-names-and-status.md): derived
// from the volume's name under the cluster's key, so cvc-sync (writing the volume's Secret) and every pool
// agent (admitting the volume's target) compute the same password without asking each other.
import { createHmac } from "node:crypto";

/** The Secret (in the operator's namespace) the installer makes once; its data key `key`. */
export const CHAP_KEY_SECRET = "cstor-replica-chap-key";
export const CHAP_KEY_SECRET_KEY = "key";
/** Where the hook server and the pool agent read the key (set from the Secret by their manifests). */
export const CHAP_KEY_ENV = "CSTOR_REPLICA_CHAP_KEY";
/** Shorter keys are refused: the key is all that keeps every volume's password unguessable. */
export const MIN_CHAP_KEY_LENGTH = 32;

/** The Secret type and data keys Kubernetes' in-tree iSCSI volume reads a CHAP session's credentials from. */
export const CHAP_SECRET_TYPE = "kubernetes.io/iscsi-chap";
export const CHAP_USERNAME_KEY = "node.session.auth.username";
export const CHAP_PASSWORD_KEY = "node.session.auth.password";

export interface ChapCredentials {
  user: string;
  /** 32 hex digits: 128 bits, and never a leading "-" that a command line could read as an option. */
  password: string;
}

/** The volume's Secret, `<volume>-chap`. */
export function chapSecretName(volume: string): string {
  return `${volume}-chap`;
}

/** Why `key` cannot be used, or undefined when it can. */
export function chapKeyProblem(key: string | undefined): string | undefined {
  if (key === undefined || key.trim() === "")
    return `${CHAP_KEY_ENV} is not set: create the Secret ${CHAP_KEY_SECRET} (docs/install.md) so volumes get CHAP credentials`;
  if (key.trim().length < MIN_CHAP_KEY_LENGTH)
    return `${CHAP_KEY_ENV} is ${key.trim().length} characters long: it must have at least ${MIN_CHAP_KEY_LENGTH} (make it with: openssl rand -hex 32)`;
  return undefined;
}

/** The volume's credentials under `key` (which chapKeyProblem accepted). */
export function volumeChap(key: string, volume: string): ChapCredentials {
  const password = createHmac("sha256", key.trim())
    .update(`cstor-replica-chap/v1/${volume}`)
    .digest("hex")
    .slice(0, 32);
  return { user: volume, password };
}
