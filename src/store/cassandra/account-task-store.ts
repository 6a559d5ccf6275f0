/**
 * `AccountTaskStore` on Cassandra (`account_tasks`): rows written and deleted at the task's
 * version (`USING TIMESTAMP`), read back with `writetime(updated_at)` as that version.
 */
import type { UserId } from '../../model/types.js';
import type { AccountTaskStore } from '../../ports/account-task-store.js';
import type { AccountTask } from '../../ports/records.js';
import type { CqlExecutor } from './executor.js';
import { toTask } from './rows.js';
import { S } from './statements.js';

export class CassandraAccountTaskStore implements AccountTaskStore {
  constructor(private readonly cql: CqlExecutor) {}

  async putAccountTask(task: AccountTask): Promise<void> {
    await this.cql.exec('putAccountTask', S.putTask, [task.userId, task.task, task.cursor, task.version]);
  }

  async getAccountTask(userId: UserId, task: AccountTask['task']): Promise<AccountTask | null> {
    const row = (await this.cql.exec('getAccountTask', S.getTask, [userId, task])).first();
    return row ? toTask(row) : null;
  }

  async listAccountTasks(): Promise<AccountTask[]> {
    return (await this.cql.allRows('listAccountTasks', S.listTasks, [])).map(toTask);
  }

  async deleteAccountTask(userId: UserId, task: AccountTask['task'], version: bigint): Promise<void> {
    await this.cql.exec('deleteAccountTask', S.deleteTask, [version, userId, task]);
  }
}
