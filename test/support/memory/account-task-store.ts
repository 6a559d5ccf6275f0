import type { UserId } from '../../../src/model/types.js';
import type { AccountTaskStore } from '../../../src/ports/account-task-store.js';
import type { AccountTask } from '../../../src/ports/records.js';
import { max } from './state.js';
import { MemoryUserStore } from './user-store.js';

/** `AccountTaskStore` in memory: one layer of `MemoryGraphStore` (`graph-store.ts`). */
export abstract class MemoryAccountTaskStore extends MemoryUserStore implements AccountTaskStore {
  async putAccountTask(task: AccountTask): Promise<void> {
    const k = `${task.userId}|${task.task}`;
    const cur = this.tasks.get(k);
    if (cur && cur.tomb !== null && task.version <= cur.tomb) return;
    if (cur?.row && cur.row.version > task.version) return;
    this.tasks.set(k, { tomb: cur?.tomb ?? null, row: { ...task } });
  }

  async getAccountTask(userId: UserId, task: AccountTask['task']): Promise<AccountTask | null> {
    const row = this.tasks.get(`${userId}|${task}`)?.row;
    return row ? { ...row } : null;
  }

  async listAccountTasks(): Promise<AccountTask[]> {
    return [...this.tasks.values()].flatMap(({ row }) => (row ? [{ ...row }] : []));
  }

  async deleteAccountTask(userId: UserId, task: AccountTask['task'], version: bigint): Promise<void> {
    const k = `${userId}|${task}`;
    const cur = this.tasks.get(k);
    const tomb = max(cur?.tomb ?? null, version);
    this.tasks.set(k, {
      tomb,
      row: cur?.row && cur.row.version > tomb ? cur.row : null,
    });
  }
}
