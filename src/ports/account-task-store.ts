import type { UserId } from '../model/types.js';
import type { AccountTask } from './records.js';

/**
 * Durable per-account background tasks (`account_tasks`): a row per unfinished task, written and
 * deleted at explicit write times (`AccountTask.version`), so a run can delete its own generation
 * of a task without a lightweight transaction and without deleting a newer one.
 */
export interface AccountTaskStore {
  /**
   * Creates or moves on the task at write time `task.version`: the row of the highest version
   * wins (an older write landing late changes nothing). Idempotent.
   */
  putAccountTask(task: AccountTask): Promise<void>;
  /** The unfinished task with its version, or null. */
  getAccountTask(userId: UserId, task: AccountTask['task']): Promise<AccountTask | null>;
  /** Every unfinished task (few at a time; read at start-up to resume them). */
  listAccountTasks(): Promise<AccountTask[]>;
  /**
   * Marks the task finished at write time `version`: a row written at a higher version (a newer
   * generation) survives; at equal versions the delete wins. Idempotent.
   */
  deleteAccountTask(userId: UserId, task: AccountTask['task'], version: bigint): Promise<void>;
}
