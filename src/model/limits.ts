/**
 * Input limits, named once and shared by the domain (which refuses more with `InvalidInputError`),
 * the HTTP schemas (which refuse more with a 400 before the domain) and the OpenAPI words that
 * state them.
 */

/** Usernames: 1–30 of `[A-Za-z0-9._]`. */
export const USERNAME_PATTERN = /^[A-Za-z0-9._]{1,30}$/;

/** Most ids `contains` accepts in one call (one single-partition read per bucket among them). */
export const MAX_CONTAINS_IDS = 1000;

/** Most ids `relationships` accepts in one call (a page of Follow buttons). */
export const MAX_RELATIONSHIP_IDS = 100;
