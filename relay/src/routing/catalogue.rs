//! Tool catalogues as the relay keeps them: immutable, shared, and
//! interned, because a fleet of runners announces the same few catalogues
//! and each copy (names, descriptions, JSON Schemas) costs kilobytes per
//! idle connection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use runner_proto::ws::ToolSpec;

/// An announced catalogue. Cloning is a reference count.
pub type Catalogue = Arc<[ToolSpec]>;

/// Distinct catalogues above which dead entries are swept on insert.
const SWEEP_ABOVE: usize = 64;

/// Hands out one shared [`Catalogue`] per distinct content.
///
/// Keyed by the catalogue's JSON text, so two announcements share an
/// allocation only when they are equal byte for byte once re-encoded. Holds
/// weak references: a catalogue no connection uses any more is freed.
#[derive(Debug, Default)]
pub struct CatalogueInterner {
    known: Mutex<HashMap<String, Weak<[ToolSpec]>>>,
}

impl CatalogueInterner {
    /// The shared copy of `tools`.
    pub fn intern(&self, tools: Vec<ToolSpec>) -> Catalogue {
        let Ok(key) = serde_json::to_string(&tools) else {
            // Our own types always encode; if one did not, sharing is
            // merely lost.
            return tools.into();
        };
        // Single map operations under the lock: a poisoned map is still
        // consistent.
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(shared) = known.get(&key).and_then(Weak::upgrade) {
            return shared;
        }
        if known.len() >= SWEEP_ABOVE {
            known.retain(|_, weak| weak.strong_count() > 0);
        }
        let shared: Catalogue = tools.into();
        known.insert(key, Arc::downgrade(&shared));
        shared
    }

    /// Distinct catalogues still in use (for tests and diagnostics).
    pub fn distinct(&self) -> usize {
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known
            .values()
            .filter(|weak| weak.strong_count() > 0)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "d".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }

    #[test]
    fn equal_catalogues_share_one_allocation_until_unused() {
        let interner = CatalogueInterner::default();
        let a = interner.intern(vec![tool("ping"), tool("shell")]);
        let b = interner.intern(vec![tool("ping"), tool("shell")]);
        let c = interner.intern(vec![tool("ping")]);
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(interner.distinct(), 2);
        drop((a, b));
        assert_eq!(interner.distinct(), 1);
        let again = interner.intern(vec![tool("ping"), tool("shell")]);
        assert_eq!(again.len(), 2);
    }
}
