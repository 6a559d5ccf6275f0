/**
 * Who may see what. A deactivated account is hidden from everyone (404), its own token included;
 * an account that blocks the viewer is hidden from the viewer (404); a private account's lists are
 * for its followers (403 to others), a `hide_lists` account's for itself. The HTTP layer decides
 * *who* acts (a token's `sub`, or graph:admin); these rules decide what that caller sees.
 */
import { HiddenError, NotVisibleError, UserNotFoundError } from '../model/errors.js';
import type { UserId, UserRecord } from '../model/types.js';
import type { EdgeStore, UserStore } from '../ports/store.js';
import type { EdgeReads } from './edge-reads.js';

export class Visibility {
  constructor(
    private readonly store: Pick<UserStore, 'getUser' | 'getUsers'> & Pick<EdgeStore, 'getEdgesOut'>,
    private readonly edges: EdgeReads,
  ) {}

  /**
   * The account gate: `owner` must be active (else `HiddenError`, 404) and the calling account,
   * when one is named, must not be deactivated (else `UserNotFoundError`, 404). One batched read.
   */
  async assertAccountsActive(owner: UserId, caller: UserId | null): Promise<void> {
    const users = await this.store.getUsers(caller === null || caller === owner ? [owner] : [owner, caller]);
    if (caller !== null && users.get(caller)?.state === 'deactivated') throw new UserNotFoundError(caller);
    if (users.get(owner)?.state !== 'active') throw new HiddenError(owner);
  }

  /** Throws `HiddenError` when the owner is deactivated or blocks the viewer. */
  async assertCanViewProfile(viewer: UserId, owner: UserId): Promise<void> {
    await this.visibleOwner(viewer, owner);
  }

  /** As the profile, and `NotVisibleError` for a `hide_lists` account or a private one the viewer does not follow. */
  async assertCanViewLists(viewer: UserId, owner: UserId): Promise<void> {
    const user = await this.visibleOwner(viewer, owner);
    if (viewer === owner) return;
    if (user.hideLists) throw new NotVisibleError();
    if (!user.private) return;
    const f = await this.edges.inverseEdges(owner, 'follows', [viewer]);
    if (f.get(viewer)?.state !== 'active') throw new NotVisibleError();
  }

  /** The owner, unless unknown (`UserNotFoundError`), deactivated or blocking the viewer (`HiddenError`). */
  private async visibleOwner(viewer: UserId, owner: UserId): Promise<UserRecord> {
    const user = await this.store.getUser(owner);
    if (!user) throw new UserNotFoundError(owner);
    if (user.state === 'deactivated') throw new HiddenError(owner);
    if (viewer === owner) return user;
    const blocks = await this.store.getEdgesOut(owner, 'blocks', [viewer]);
    if (blocks.get(viewer)?.state === 'active') throw new HiddenError(owner);
    return user;
  }
}
