/**
 * The data step of `cql/014_deactivated_accounts.cql`: registers every account already
 * deactivated when the registry table is created, at the write time of its `state` cell, so a
 * later reactivation (a delete at a higher write time) still wins. A resumable, write-time-keeping
 * scan of `users` like every copy (`data-step.ts`). Run offline like the list-table migration: a
 * previous version still serving would deactivate accounts without registering them.
 */
import { deactivatedShard } from '../../../ports/user-store.js';
import { copyTable, type DataStep } from './data-step.js';

const register: DataStep = async (ctx, step) => {
  await copyTable(ctx, step, {
    name: 'users → deactivated_accounts',
    from: 'users',
    keyColumns: ['user_id'],
    cells: ['state'],
    map: (row) => {
      if (row.state !== 'deactivated') return [];
      const id = row.user_id as bigint;
      const since = row.wt_state as bigint;
      return [
        {
          table: 'deactivated_accounts',
          key: { shard: deactivatedShard(id), user_id: id },
          cells: { since: { value: since, writetime: since } },
        },
      ];
    },
  });
};

/** The data steps the registry's file names. */
export const DEACTIVATED_REGISTRY_STEPS: Record<string, DataStep> = { register_deactivated: register };
