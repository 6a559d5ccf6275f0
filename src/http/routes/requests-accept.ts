import { FollowResult } from './following-put.js';
import { pairMutation } from './pair-mutation.js';

export const acceptRequest = pairMutation({
  operationId: 'acceptRequest',
  method: 'post',
  path: '/v1/users/{id}/requests/{requester}/accept',
  tags: ['requests'],
  summary: 'Accept a pending follow request',
  description: 'No pending request (and no follow): 404. A double accept answers 200 and changes nothing.',
  other: 'requester',
  result: { description: 'requester now follows id', schema: FollowResult },
  run: (g, id, requester, o) => g.acceptRequest(id, requester, o),
});
