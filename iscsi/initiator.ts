// PLACEHOLDER-TYPES (replaced by branch kernel-adapters)
import type { Runner } from "../process/runner.js";
export interface InitiatorOptions { iscsiadm: readonly string[]; sysfs: string; iface: string; initiatorIqn: string; replacementTimeoutSeconds: number }
export interface LegLogin { targetIqn: string; portal: string; user: string; password: string }
export interface SessionView { sid: number; targetIqn: string; portal?: string; iface?: string; initiatorIqn?: string; state: string; luns: Record<number, { disk: string; state: string }> }
export declare class IscsiInitiator {
  constructor(runner: Runner, options: InitiatorOptions);
  ensureIface(): Promise<void>;
  login(leg: LegLogin): Promise<void>;
  logout(targetIqn: string, portal: string): Promise<void>;
  sessions(): Promise<SessionView[]>;
}
