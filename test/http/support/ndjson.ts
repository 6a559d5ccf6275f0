/** NDJSON parsing and bulk user creation for the export/import tests. */

import type { UserId } from '../../../src/model/types.js';
import type { GraphStore } from '../../../src/ports/graph-store.js';

/** The objects of an NDJSON text, one per non-empty line. */
export function readNdjson(text: string): unknown[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as unknown);
}

/** Users `u<id>` written straight through the store, `concurrency` at a time. */
export async function loadUsers(store: GraphStore, ids: readonly UserId[], concurrency = 32): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++] as UserId;
      await store.putUser({ id, username: `u${id}`, private: false, state: 'active', hideLists: false });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}
