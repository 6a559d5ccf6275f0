import { stateSchema } from '../schemas.js';
import { pairMutation } from './pair-mutation.js';

/**
 * The follow edge's state after a mutation, as the pair's fold says. Live calls answer what they
 * asked for; an admin replay (`Graph-Position`) the fold refuses answers what stands instead.
 */
export const FollowResult = stateSchema('FollowResult', ['following', 'requested', 'none']);

export const follow = pairMutation({
  operationId: 'follow',
  method: 'put',
  path: '/v1/users/{id}/following/{target}',
  tags: ['following'],
  summary: 'Follow (or request to follow a private account)',
  description:
    'Idempotent: already following/requested answers the same 200 and keeps the original followed_at. ' +
    'Self-follow 400; a block either way 403; over the following cap 409.',
  other: 'target',
  result: { description: 'Following or requested', schema: FollowResult },
  run: (g, id, target, o) => g.follow(id, target, o),
});
