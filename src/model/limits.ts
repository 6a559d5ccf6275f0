/**
 * Caps on how many ids one call takes, shared by the domain (which refuses more with
 * `InvalidInputError`), the HTTP schemas (which refuse more with a 400 before the domain) and the
 * OpenAPI words that state them.
 */

/** Most ids `contains` accepts in one call (one single-partition read of the inverse edges). */
export const MAX_CONTAINS_IDS = 1000;

/** Most ids `relationships` accepts in one call (a page of Follow buttons). */
export const MAX_RELATIONSHIP_IDS = 100;
