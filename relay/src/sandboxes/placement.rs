//! Which sandbox host takes a new sandbox: the least loaded one that has
//! room. Pure, so the rule is tested without hosts.

use runner_proto::sandbox::Capacity;

/// A host that could take the sandbox: an online environment of role
/// [`runner_proto::sandbox::HOST_ROLE`] and what it reported last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCandidate<'a> {
    pub environment_id: &'a str,
    pub capacity: Capacity,
}

/// Memory a host must have available to take one more sandbox, MiB.
pub const MIN_AVAILABLE_MB: u64 = 256;

/// The hosts with room, most suitable first: the least loaded is the
/// smallest share of slots in use (so a big host takes more than a small
/// one), then the most memory available, then the id (a stable order).
pub fn by_preference<'a>(hosts: &[HostCandidate<'a>]) -> Vec<&'a str> {
    let mut room: Vec<&HostCandidate<'a>> = hosts
        .iter()
        .filter(|host| {
            host.capacity.free_slots() > 0 && host.capacity.memory_available_mb >= MIN_AVAILABLE_MB
        })
        .collect();
    room.sort_by(|a, b| {
        // used_a / total_a < used_b / total_b, without division.
        let load_a = u64::from(a.capacity.slots_used) * u64::from(b.capacity.slots_total);
        let load_b = u64::from(b.capacity.slots_used) * u64::from(a.capacity.slots_total);
        load_a
            .cmp(&load_b)
            .then(
                b.capacity
                    .memory_available_mb
                    .cmp(&a.capacity.memory_available_mb),
            )
            .then(a.environment_id.cmp(b.environment_id))
    });
    room.into_iter().map(|host| host.environment_id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host to use, or `None` when every host is full.
    fn choose<'a>(hosts: &[HostCandidate<'a>]) -> Option<&'a str> {
        by_preference(hosts).first().copied()
    }

    fn host(id: &str, used: u32, total: u32, available_mb: u64) -> HostCandidate<'_> {
        HostCandidate {
            environment_id: id,
            capacity: Capacity {
                slots_total: total,
                slots_used: used,
                memory_total_mb: 8192,
                memory_available_mb: available_mb,
            },
        }
    }

    #[test]
    fn the_least_loaded_host_with_room_wins() {
        let hosts = [
            host("a", 3, 4, 4096),
            host("b", 1, 4, 4096),
            host("c", 0, 4, 100),
        ];
        assert_eq!(choose(&hosts), Some("b"), "c has no memory left");
        // Shares, not counts: 2 of 8 is less loaded than 1 of 2.
        let hosts = [host("small", 1, 2, 4096), host("big", 2, 8, 4096)];
        assert_eq!(choose(&hosts), Some("big"));
        // Equal load: more memory available, then the id.
        let hosts = [host("x", 1, 4, 2048), host("y", 1, 4, 4096)];
        assert_eq!(choose(&hosts), Some("y"));
        let hosts = [host("y", 0, 4, 4096), host("x", 0, 4, 4096)];
        assert_eq!(choose(&hosts), Some("x"));
    }

    #[test]
    fn the_order_puts_every_host_with_room_by_load_and_leaves_full_ones_out() {
        let hosts = [
            host("a", 3, 4, 4096),
            host("full", 4, 4, 4096),
            host("b", 1, 4, 4096),
            host("c", 2, 4, 4096),
        ];
        assert_eq!(by_preference(&hosts), ["b", "c", "a"]);
    }

    #[test]
    fn full_hosts_and_no_hosts_give_none() {
        assert_eq!(
            choose(&[host("a", 4, 4, 4096), host("b", 0, 0, 4096)]),
            None
        );
        assert_eq!(choose(&[]), None);
    }
}
