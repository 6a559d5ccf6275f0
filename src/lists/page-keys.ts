/** List keys at the edges of a page: the id bounds and the keys just beside a boundary. */
import type { ListEntry } from '../model/types.js';
import type { ListItem } from './contracts.js';

/** The smallest and largest ids: `(t, MIN_ID)` lies below every key at time `t`. */
export const MIN_ID = -(1n << 63n);
export const MAX_ID = (1n << 63n) - 1n;

/** The key just newer than `e`: an older read from it starts with `e` itself. */
export const keyAbove = (e: ListEntry): ListEntry =>
  e.otherId === MAX_ID ? { createdAt: e.createdAt + 1n, otherId: MIN_ID } : { ...e, otherId: e.otherId + 1n };

/** The key just older than `e`: a newer read from it starts with `e` itself. */
export const keyBelow = (e: ListEntry): ListEntry =>
  e.otherId === MIN_ID ? { createdAt: e.createdAt - 1n, otherId: MAX_ID } : { ...e, otherId: e.otherId - 1n };

/** A list row as a page item (the username only when the row has one). */
export const toItem = (e: ListEntry): ListItem => ({
  id: e.otherId,
  createdAt: e.createdAt,
  ...(e.username === undefined ? {} : { username: e.username }),
});
