//! Who may see and who may manage an environment (SPEC §2), and who may
//! decide its approvals.
//!
//! Using (read, status, tools, invoke): shared environments and the member's
//! own teams' ones. Managing (update, delete, tokens): organisation admins
//! for shared ones, team members for their team's ones; an admin must join a
//! team to act on its environments. Seeing: what a member may use, plus, for
//! admins, every environment of the organisation (so an admin outside a
//! team gets 403, while any other member gets 404 and learns nothing).

use crate::environment::{EnvironmentRecord, Scope};
use crate::store::{Member, MemberKind};
use crate::templates::TemplateRecord;

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

/// The scopes the member may create environments and templates in, the
/// ones [`can_manage`] allows: shared for admins, then their teams'.
pub fn manageable_scopes(member: &Member) -> Vec<Scope> {
    let shared = member.is_admin.then_some(Scope::Shared);
    shared
        .into_iter()
        .chain(member.teams.iter().cloned().map(Scope::Team))
        .collect()
}

/// Whether the environment exists as far as this member is concerned.
/// Sandbox hosts and sandboxes are the organisation's machinery: admins see
/// them; a member reaches a sandbox through the session it serves.
pub fn can_see(member: &Member, environment: &EnvironmentRecord) -> bool {
    member.is_admin || (can_use(member, &environment.scope) && !is_machinery(environment))
}

/// Whether the template exists as far as this member is concerned (as
/// [`can_see`] for environments).
pub fn can_see_template(member: &Member, template: &TemplateRecord) -> bool {
    member.is_admin || can_use(member, &template.scope)
}

/// Whether the environment is a sandbox host or a sandbox.
pub fn is_machinery(environment: &EnvironmentRecord) -> bool {
    is_machinery_type(&environment.env_type)
}

/// Whether a type label is one of the relay's own roles, which only the
/// relay (sandboxes) or an admin (sandbox hosts) may give.
pub fn is_machinery_type(env_type: &str) -> bool {
    env_type == runner_proto::sandbox::HOST_ROLE || env_type == runner_proto::sandbox::SANDBOX_ROLE
}

/// Why nobody may call tools on this environment through the API, if so:
/// a sandbox host's tools are the relay's to call.
pub fn refuses_calls(environment: &EnvironmentRecord) -> Option<String> {
    (environment.env_type == runner_proto::sandbox::HOST_ROLE).then(|| {
        format!(
            "environment {:?} is a sandbox host: it starts sandboxes for sessions and takes no \
             tool calls; start a session with \"environment\": \"sandbox\"",
            environment.name
        )
    })
}

/// Why a member may not decide an approval.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CannotDecide {
    #[error("nobody approves their own request: another person must decide it")]
    OwnRequest,
    #[error("agents cannot decide approvals: a person must")]
    Agent,
    #[error("{0}")]
    Scope(String),
}

/// Whether `member` may decide an approval for `environment`: a person
/// (not an agent) who may manage the environment's scope (organisation
/// admins for shared environments, the team's members for a team's), and
/// not the requester.
pub fn may_decide(member: &Member, scope: &Scope, requester_id: &str) -> Result<(), CannotDecide> {
    if member.id == requester_id {
        return Err(CannotDecide::OwnRequest);
    }
    if member.kind == MemberKind::Agent {
        return Err(CannotDecide::Agent);
    }
    if !can_manage(member, scope) {
        return Err(CannotDecide::Scope(match scope {
            Scope::Shared => {
                "only organisation admins decide approvals of shared environments".to_owned()
            }
            Scope::Team(team) => {
                format!("only members of team {team:?} decide approvals of its environments")
            }
        }));
    }
    Ok(())
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

    #[test]
    fn requesters_agents_and_outsiders_cannot_decide() {
        let member = |id: &str, admin: bool, teams: &[&str], kind| Member {
            id: id.into(),
            name: id.into(),
            is_admin: admin,
            teams: teams.iter().map(|team| (*team).to_owned()).collect(),
            kind,
            default_environment: None,
        };
        let mut scope = Scope::Team("ops".into());
        let ops = member("m_ops", false, &["ops"], MemberKind::Person);
        assert_eq!(may_decide(&ops, &scope, "m_other"), Ok(()));
        assert_eq!(
            may_decide(&ops, &scope, "m_ops"),
            Err(CannotDecide::OwnRequest)
        );
        let agent = member("m_bot", false, &["ops"], MemberKind::Agent);
        assert_eq!(
            may_decide(&agent, &scope, "m_other"),
            Err(CannotDecide::Agent)
        );
        let admin = member("m_admin", true, &[], MemberKind::Person);
        assert!(matches!(
            may_decide(&admin, &scope, "m_other"),
            Err(CannotDecide::Scope(_))
        ));
        scope = Scope::Shared;
        assert_eq!(may_decide(&admin, &scope, "m_other"), Ok(()));
        assert!(may_decide(&ops, &scope, "m_other").is_err());
    }
}
