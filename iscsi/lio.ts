// PLACEHOLDER-TYPES (replaced by branch kernel-adapters)
export interface LioAcl { initiatorIqn: string; user: string; password: string; writeProtect: boolean }
export interface LioExport { targetIqn: string; backstore: string; device: string; portal: string; acls: LioAcl[] }
export interface LioState { targetIqn: string; enabled: boolean; device?: string; portals: string[]; acls: { initiatorIqn: string; writeProtect: boolean }[] }
export declare class Lio {
  constructor(root?: string);
  read(targetIqn: string): Promise<LioState | undefined>;
  ensure(wanted: LioExport): Promise<void>;
  setWriteProtect(targetIqn: string, initiatorIqn: string, on: boolean): Promise<void>;
  remove(targetIqn: string, backstore: string): Promise<void>;
}
