//! What a handle remembers between cleanup passes, per IP family: the matcher of its last
//! pass (the base of the next endpoint diff when it succeeded, and of the deleted frontends in
//! any case) and the measured costs that choose between a targeted and a full pass.

use crate::cost::CostModel;
use crate::flow::Family;
use crate::stale::StaleMatcher;

/// The last pass of one family on this handle.
#[derive(Debug, Clone, Default)]
pub enum LastPass {
    /// None yet: the next pass is full.
    #[default]
    None,
    /// It failed, was partial, or left flows it could not delete: the next pass is full. Holds
    /// the tables it ran with (deleted frontends included), whose frontends the next pass
    /// checks for deletion.
    Incomplete(Option<StaleMatcher>),
    /// It succeeded with these tables: the next pass may start from their diff.
    Done(StaleMatcher),
}

impl LastPass {
    /// The tables of that pass, the base for finding deleted frontends.
    pub fn tables(&self) -> Option<&StaleMatcher> {
        match self {
            LastPass::None => None,
            LastPass::Incomplete(m) => m.as_ref(),
            LastPass::Done(m) => Some(m),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct FamilyState {
    pub last: LastPass,
    pub cost: CostModel,
}

#[derive(Debug, Clone, Default)]
pub struct StaleState {
    v4: FamilyState,
    v6: FamilyState,
}

impl StaleState {
    pub fn family(&mut self, family: Family) -> &mut FamilyState {
        match family {
            Family::V4 => &mut self.v4,
            Family::V6 => &mut self.v6,
        }
    }
}

impl crate::conntrack::Conntrack {
    /// Test hook: the measured costs of `family`, to pin a decision.
    pub fn stale_costs_mut(&mut self, family: Family) -> &mut CostModel {
        &mut self.stale.family(family).cost
    }

    /// Whether filtered flushes were found to work on this handle (probed once, when a
    /// targeted pass is first considered).
    pub fn flush_support(&self) -> crate::flush::FlushSupport {
        self.flush_support
    }
}
