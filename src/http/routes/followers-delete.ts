import { FollowResult } from './following-put.js';
import { pairMutation } from './pair-mutation.js';

export const removeFollower = pairMutation({
  operationId: 'removeFollower',
  method: 'delete',
  path: '/v1/users/{id}/followers/{follower}',
  tags: ['followers'],
  summary: 'Remove a follower (idempotent)',
  other: 'follower',
  result: { description: 'Not followed by follower', schema: FollowResult },
  run: (g, id, follower, o) => g.removeFollower(id, follower, o),
});
