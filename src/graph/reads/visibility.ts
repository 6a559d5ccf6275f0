/**
 * Who may see what. A deactivated account is hidden from everyone (404), its own token included;
 * an account that blocks the viewer is hidden from the viewer (404); a private account's lists are
 * for its followers (403 to others), a `hide_lists` account's for itself; graph:admin sees every
 * existing account's lists, and a deactivated account itself. The HTTP layer says *who* acts (a
 * token's `sub`, and whether it is graph:admin); these rules decide what that caller sees.
 */
import { HiddenError, NotVisibleError, UserNotFoundError } from '../../model/errors.js';
import type { UserId, UserRecord } from '../../model/types.js';
import type { EdgeStore } from '../../ports/edge-store.js';
import type { UserStore } from '../../ports/user-store.js';
import type { Caller } from '../contracts.js';
import type { EdgeReads } from './edge-reads.js';

export class Visibility {
  constructor(
    private readonly store: Pick<UserStore, 'getUser' | 'getUsers'> & Pick<EdgeStore, 'getEdgesOut'>,
    private readonly edges: EdgeReads,
    /** Deactivation from memory (`DeactivatedAccounts.isDeactivated`): null when it cannot say. */
    private readonly deactivated: (id: UserId) => boolean | null = () => null,
  ) {}

  /**
   * The account gate (`GraphApi.assertAccountsActive`): one batched read of the two user rows.
   * Returns the owner's row it read (null when it read none), for the request's later checks.
   */
  async assertAccountsActive(
    owner: UserId,
    caller: Caller,
    scope: 'account' | 'other',
  ): Promise<UserRecord | null> {
    if (caller.admin && scope === 'account') return null;
    const self = caller.admin ? null : caller.sub;
    // The caller's own state from the registry when it can say; its row otherwise.
    const selfKnown = self === null || self === owner ? null : this.deactivated(self);
    const users = await this.store.getUsers(
      self === null || self === owner || selfKnown !== null ? [owner] : [owner, self],
    );
    if (self !== null && (selfKnown ?? users.get(self)?.state === 'deactivated'))
      throw new UserNotFoundError(self);
    const row = users.get(owner);
    if (row?.state !== 'active') throw new HiddenError(owner);
    return row;
  }

  /**
   * `GraphApi.assertListsVisible`: graph:admin sees any existing account's lists. `known`: the
   * owner's row this request already read (the account gate's), so it is not read again.
   */
  async assertListsVisible(caller: Caller, owner: UserId, known?: UserRecord | null): Promise<void> {
    if (!caller.admin) return this.assertCanViewLists(caller.sub, owner, known);
    if (!(known ?? (await this.store.getUser(owner)))) throw new UserNotFoundError(owner);
  }

  /** `assertListsVisible` as a boolean (false where it throws `NotVisibleError`). */
  async listsVisible(caller: Caller, owner: UserId): Promise<boolean> {
    try {
      await this.assertListsVisible(caller, owner);
      return true;
    } catch (e) {
      if (e instanceof NotVisibleError) return false;
      throw e;
    }
  }

  /** Throws `HiddenError` when the owner is deactivated or blocks the viewer. */
  async assertCanViewProfile(viewer: UserId, owner: UserId): Promise<void> {
    await this.visibleOwner(viewer, owner);
  }

  /** As the profile, and `NotVisibleError` for a `hide_lists` account or a private one the viewer does not follow. */
  async assertCanViewLists(viewer: UserId, owner: UserId, known?: UserRecord | null): Promise<void> {
    const user = await this.visibleOwner(viewer, owner, known);
    if (viewer === owner) return;
    if (user.hideLists) throw new NotVisibleError();
    if (!user.private) return;
    const f = await this.edges.inverseEdges(owner, 'follows', [viewer]);
    if (f.get(viewer)?.state !== 'active') throw new NotVisibleError();
  }

  /** The owner, unless unknown (`UserNotFoundError`), deactivated or blocking the viewer (`HiddenError`). */
  private async visibleOwner(viewer: UserId, owner: UserId, known?: UserRecord | null): Promise<UserRecord> {
    const user = known ?? (await this.store.getUser(owner));
    if (!user) throw new UserNotFoundError(owner);
    if (user.state === 'deactivated') throw new HiddenError(owner);
    if (viewer === owner) return user;
    const blocks = await this.store.getEdgesOut(owner, 'blocks', [viewer]);
    if (blocks.get(viewer)?.state === 'active') throw new HiddenError(owner);
    return user;
  }
}
