//! Who may see and who may manage an environment (SPEC §2).
//!
//! Using (read, status, tools, invoke): shared environments and the member's
//! own teams' ones. Managing (update, delete, tokens): organisation admins
//! for shared ones, team members for their team's ones; an admin must join a
//! team to act on its environments. Seeing: what a member may use, plus, for
//! admins, every environment of the organisation (so an admin outside a
//! team gets 403, while any other member gets 404 and learns nothing).

use crate::environment::{EnvironmentRecord, Scope};
use crate::store::Member;

/// Whether the member may see and use environments of this scope.
pub fn can_use(member: &Member, scope: &Scope) -> bool {
    match scope {
        Scope::Shared => true,
        Scope::Team(team) => member.teams.iter().any(|t| t == team),
    }
}

/// Whether the member may create, change and delete environments of this
/// scope.
pub fn can_manage(member: &Member, scope: &Scope) -> bool {
    match scope {
        Scope::Shared => member.is_admin,
        Scope::Team(team) => member.teams.iter().any(|t| t == team),
    }
}

/// Whether the environment exists as far as this member is concerned.
pub fn can_see(member: &Member, environment: &EnvironmentRecord) -> bool {
    member.is_admin || can_use(member, &environment.scope)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(is_admin: bool, teams: &[&str]) -> Member {
        Member {
            id: "m".into(),
            name: "m".into(),
            is_admin,
            teams: teams.iter().map(|t| (*t).to_owned()).collect(),
            kind: crate::store::MemberKind::Person,
            default_environment: None,
        }
    }

    #[test]
    fn admins_manage_shared_but_not_foreign_teams() {
        let admin = member(true, &[]);
        let ops = Scope::Team("ops".into());
        assert!(can_manage(&admin, &Scope::Shared));
        assert!(!can_manage(&admin, &ops));
        assert!(!can_use(&admin, &ops));
        let operator = member(false, &["ops"]);
        assert!(can_manage(&operator, &ops));
        assert!(can_use(&operator, &Scope::Shared));
        assert!(!can_manage(&operator, &Scope::Shared));
    }
}
