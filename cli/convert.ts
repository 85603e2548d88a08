// `cstor-pool convert -f <file|dir|->`: what an SPC or cstor.openebs.io/v1 cluster holds (kubectl get
// spc,csp,bd -o yaml, or kubectl get cspc.cstor.openebs.io,cspi.cstor.openebs.io,bd -n openebs -o yaml) →
// the openebs.io/v1alpha1 CStorPoolClusters on stdout, to review and apply. The conversion is lib/convert's;
// this reads, prints and picks the exit code. Any problem: nothing on stdout, each problem on stderr, exit 1.
import { canonicalYaml } from "../lib/canonical.js";
import { convertObjects } from "../lib/convert/index.js";
import { EXIT, InputError, parseFlags, reportUsageError, UsageError, type FlagTable } from "./args.js";
import { processIO, readAll, type CliIO } from "./input.js";

export const CONVERT_USAGE = `Usage: cstor-pool convert -f <file|dir|-> [-n <namespace>]

Prints the openebs.io/v1alpha1 CStorPoolClusters that describe the pools an older cStor operator built, one pool
spec per existing pool, each naming its zpool (poolConfig.existingPoolName) so the node daemon imports it
instead of creating one. Read docs/migration.md before applying the output.
  -f, --filename       what the old operator left: StoragePoolClaims with their CStorPools and BlockDevices
                       (kubectl get spc,csp -o yaml and kubectl get bd -n openebs -o yaml), or cstor.openebs.io/v1
                       CStorPoolClusters with their CStorPoolInstances and BlockDevices; a file, a directory or
                       "-" (standard input); may be repeated
  -n, --namespace      where the CStorPoolCluster of a StoragePoolClaim goes (default openebs); a v1
                       CStorPoolCluster keeps its own
Problems (what has no openebs.io/v1alpha1 equivalent, or is missing) are printed on standard error, each naming
the object and field, and nothing is printed on standard output. Notes say what to do before applying.
Exit codes: 0 converted, 1 refused (some object cannot be converted), 2 usage error or unreadable input.
`;

const FLAGS: FlagTable<"file" | "namespace"> = {
  "-f": "file",
  "--filename": "file",
  "-n": "namespace",
  "--namespace": "namespace",
};

export function runConvert(argv: readonly string[], io: CliIO = processIO): Promise<number> {
  let files: string[];
  let namespace: string;
  try {
    const given = parseFlags(argv, FLAGS);
    if (given === "help") {
      io.stdout(CONVERT_USAGE);
      return Promise.resolve(EXIT.ok);
    }
    files = given.file;
    namespace = given.namespace ?? "openebs";
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    return Promise.resolve(reportUsageError(err, CONVERT_USAGE, io.stderr));
  }
  let result: ReturnType<typeof convertObjects>;
  try {
    result = convertObjects(readAll(io, files), namespace);
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    return Promise.resolve(reportUsageError(err, CONVERT_USAGE, io.stderr));
  }
  for (const p of result.problems) io.stderr(`error: ${p.object}: ${p.field}: ${p.message}\n`);
  if (result.problems.length > 0) return Promise.resolve(EXIT.refused);
  for (const note of result.notes) io.stderr(`note: ${note}\n`);
  io.stdout(result.cspcs.map((cspc) => canonicalYaml(cspc)).join("---\n"));
  return Promise.resolve(EXIT.ok);
}
