/**
 * The stored form of a feed row's content (`graph_events.events`): `user` for an account's
 * update, followed by `:` and the fields it named joined by `,` (rows written before fields were
 * kept have none), else each transition as `<relation><direction><on>` joined by `,` — direction `>` for
 * low → high, `<` for high → low; on `+`, off `-` — and the empty string for a row without
 * events. Both stores use it, so a tie between two rows at one version breaks the same way (the
 * larger value wins, as Cassandra's cell tie rule does).
 */
import type { EdgeTransition, EventKey, EventRow } from '../model/events.js';
import { RELATIONS, type Relation, USER_FIELDS, type UserField } from '../model/types.js';

/** The `events` text of a row. */
export function encodeEvents(row: EventRow): string {
  if (row.user) return row.fields ? `user:${row.fields.join(',')}` : 'user';
  return row.transitions
    .map((t) => `${t.relation}${t.sourceId === row.key.low ? '>' : '<'}${t.on ? '+' : '-'}`)
    .join(',');
}

/** A row from its key and `events` text; throws on text this codec did not write. */
export function decodeEvents(key: EventKey, text: string): EventRow {
  if (text === 'user') return { key, transitions: [], user: true };
  if (text.startsWith('user:')) {
    const fields = text.slice(5).split(',');
    if (!fields.every((f) => USER_FIELDS.includes(f as UserField)))
      throw new Error(`bad stored event ${text}`);
    return { key, transitions: [], user: true, fields: fields as UserField[] };
  }
  if (text === '') return { key, transitions: [] };
  const transitions: EdgeTransition[] = text.split(',').map((part) => {
    const m = /^([a-z_]+)([<>])([+-])$/.exec(part);
    if (!m || !RELATIONS.includes(m[1] as Relation)) throw new Error(`bad stored event ${part}`);
    const forward = m[2] === '>';
    return {
      sourceId: forward ? key.low : key.high,
      relation: m[1] as Relation,
      targetId: forward ? key.high : key.low,
      on: m[3] === '+',
    };
  });
  return { key, transitions };
}

/** Whether a row holds any event. */
export const hasEvents = (row: EventRow): boolean => row.user === true || row.transitions.length > 0;
