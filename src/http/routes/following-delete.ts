import { FollowResult } from './following-put.js';
import { pairMutation } from './pair-mutation.js';

export const unfollow = pairMutation({
  operationId: 'unfollow',
  method: 'delete',
  path: '/v1/users/{id}/following/{target}',
  tags: ['following'],
  summary: 'Unfollow, or cancel a pending request (idempotent)',
  other: 'target',
  result: { description: 'Not following', schema: FollowResult },
  run: (g, id, target, o) => g.unfollow(id, target, o),
});
