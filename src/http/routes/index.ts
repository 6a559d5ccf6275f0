/** Registers every `/v1` operation; one file per operation (or per small resource). */
import type { ApiApp, RouteDeps } from '../route-kit.js';
import { registerContains } from './contains.js';
import { registerCounts } from './counts.js';
import { registerEvents } from './events.js';
import { registerFollowersList, registerFollowingList } from './follow-lists.js';
import { registerFollowersSearch, registerFollowingSearch } from './follow-search.js';
import { registerFollowedBy } from './followed-by.js';
import { removeFollower } from './followers-delete.js';
import { registerFollowersScan } from './followers-scan.js';
import { unfollow } from './following-delete.js';
import { registerFollowingExport } from './following-export.js';
import { registerFollowingImport } from './following-import.js';
import { follow } from './following-put.js';
import { registerFollowStatus } from './following-status.js';
import { registerRelationships } from './relationships.js';
import { acceptRequest } from './requests-accept.js';
import { declineRequest } from './requests-decline.js';
import { registerRequestsList } from './requests-list.js';
import { registerOutgoingRequests } from './requests-outgoing.js';
import { registerMutuals, registerNotFollowedBack } from './set-lists.js';
import { registerSuggestions } from './suggestions.js';
import { registerTypedEdges } from './typed-edges.js';
import { registerGetUser } from './users-get.js';
import { registerPutUser } from './users-put.js';

export function registerRoutes(app: ApiApp, deps: RouteDeps): void {
  registerPutUser(app, deps);
  registerGetUser(app, deps);
  follow.register(app, deps);
  unfollow.register(app, deps);
  // Before `following/{target}`: `export` and `import` are fixed segments, not targets.
  registerFollowingExport(app, deps);
  registerFollowingImport(app, deps);
  // Before `following/{target}`: `search` is a fixed segment, not a target.
  registerFollowingSearch(app, deps);
  registerFollowStatus(app, deps);
  registerFollowingList(app, deps);
  registerContains(app, deps);
  registerFollowersScan(app, deps);
  registerFollowersList(app, deps);
  registerFollowersSearch(app, deps);
  removeFollower.register(app, deps);
  registerFollowedBy(app, deps);
  registerCounts(app, deps);
  registerRequestsList(app, deps);
  acceptRequest.register(app, deps);
  declineRequest.register(app, deps);
  registerTypedEdges(app, deps);
  registerRelationships(app, deps);
  registerOutgoingRequests(app, deps);
  registerMutuals(app, deps);
  registerNotFollowedBack(app, deps);
  registerSuggestions(app, deps);
  registerEvents(app, deps);
}
