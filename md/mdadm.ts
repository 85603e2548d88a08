// PLACEHOLDER-TYPES (replaced by branch kernel-adapters)
import type { Runner } from "../process/runner.js";
export interface MdOptions { mdadm: readonly string[]; sysfs: string; dev: string }
export interface Superblock { disk: string; arrayUuid: string; events: number; name?: string; role?: string; state?: string }
export interface BlockStat { reads: number; readSectors: number; readMs: number; writes: number; writeSectors: number; writeMs: number; inFlight: number }
export interface MdLeg { disk: string; slot?: number; states: string[] }
export interface ArrayState { kernelName: string; arrayState: string; raidDisks: number; degraded: number; syncAction: string; syncCompleted?: { done: number; total: number }; sizeBytes: number; legs: MdLeg[]; stat: BlockStat }
export declare class Mdadm {
  constructor(runner: Runner, options: MdOptions);
  examine(disk: string): Promise<Superblock | undefined>;
  create(o: { name: string; uuid: string; disks: string[] }): Promise<string>;
  assemble(o: { name: string; uuid: string; disks: string[] }): Promise<string>;
  find(name: string): Promise<string | undefined>;
  state(kernelName: string): Promise<ArrayState>;
  add(kernelName: string, disk: string): Promise<void>;
  reAdd(kernelName: string, disk: string): Promise<void>;
  remove(kernelName: string, disk: string): Promise<void>;
  grow(kernelName: string, raidDevices: number): Promise<void>;
  stop(kernelName: string): Promise<void>;
}
