/**
 * Statement shapes of the pair protocol before the review's fixes (two reads, clock-timed cells):
 * the engine must keep running them, and they pin the rules the findings turned on.
 */
export const OLD = {
  announce: 'UPDATE pair_ops SET compact_to = ?, compact_at = ? WHERE low_id = ? AND high_id = ?',
  observe: 'UPDATE pair_ops SET compact_seen = ? WHERE low_id = ? AND high_id = ?',
  commitCheckpoint:
    'UPDATE pair_ops USING TIMESTAMP ? SET cp_horizon = ?, cp_state = ? WHERE low_id = ? AND high_id = ?',
  clearAnnouncement:
    'UPDATE pair_ops SET compact_to = null, compact_at = null, compact_seen = null WHERE low_id = ? AND high_id = ?',
  dropFolded: 'DELETE FROM pair_ops WHERE low_id = ? AND high_id = ? AND position <= ?',
  pairStatic:
    'SELECT DISTINCT low_id, high_id, cp_horizon, cp_state, compact_to, compact_at, compact_seen FROM pair_ops WHERE low_id = ? AND high_id = ?',
  pairOps:
    'SELECT position, source_id, kind, base FROM pair_ops WHERE low_id = ? AND high_id = ? AND position > ?',
} as const;
