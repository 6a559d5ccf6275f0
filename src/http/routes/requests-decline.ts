import { FollowResult } from './following-put.js';
import { pairMutation } from './pair-mutation.js';

export const declineRequest = pairMutation({
  operationId: 'declineRequest',
  method: 'post',
  path: '/v1/users/{id}/requests/{requester}/decline',
  tags: ['requests'],
  summary: 'Decline a pending follow request (idempotent)',
  other: 'requester',
  result: { description: 'No request', schema: FollowResult },
  run: (g, id, requester, o) => g.declineRequest(id, requester, o),
});
