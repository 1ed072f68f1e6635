//! The max over several partitions' heuristics (Holte, Felner, Newton, Meshulam & Furcy 2006,
//! "Maximizing over multiple pattern databases speeds up heuristic search"), each partition's
//! ranks carried move by move as [`PdbHeuristic`] carries its own.

use super::{PdbHeuristic, PdbState};
use crate::heuristic::Heuristic;

/// `N` partitions' heuristics under the max: the search's heuristic for a [`PdbHeuristic`] with
/// `N - 1` partitions added by [`PdbHeuristic::with_also`].
#[derive(Clone, Debug)]
pub struct PdbMax<const N: usize> {
    parts: [PdbHeuristic; N],
}

impl<const N: usize> PdbMax<N> {
    /// `pdb` and the partitions added to it, if they are `N` in all and none has dual lookups
    /// (those are evaluated by [`PdbHeuristic`]'s own `Heuristic`).
    pub fn new(pdb: &PdbHeuristic) -> Option<PdbMax<N>> {
        // Zero-aware tables are carried by `ZeroMax`; their ranks are not `advance`d here.
        if pdb.has_dual()
            || pdb.also.iter().any(PdbHeuristic::has_dual)
            || pdb.is_zero_aware()
            || pdb.also.iter().any(PdbHeuristic::is_zero_aware)
        {
            return None;
        }
        let parts: [PdbHeuristic; N] = pdb.split_partitions()?;
        Some(PdbMax { parts })
    }
}

impl<const N: usize> Heuristic for PdbMax<N> {
    type State = [PdbState; N];

    fn evaluate(&self, cells: &[u8]) -> (u32, [PdbState; N]) {
        let mut h = 0;
        let states = std::array::from_fn(|i| {
            let (value, state) = self.parts[i].evaluate_own::<false>(cells);
            h = h.max(value);
            state
        });
        (h, states)
    }

    #[inline(always)]
    fn after_move(
        &self,
        h: u32,
        state: &[PdbState; N],
        label: u8,
        from: usize,
        to: usize,
        vertical: bool,
    ) -> (u32, [PdbState; N]) {
        self.after_move_within(h, state, label, from, to, vertical, u32::MAX)
    }

    #[inline(always)]
    fn after_move_within(
        &self,
        _: u32,
        state: &[PdbState; N],
        label: u8,
        from: usize,
        to: usize,
        _: bool,
        limit: u32,
    ) -> (u32, [PdbState; N]) {
        let mut next = *state;
        // Every partition is of one shape, so of one Manhattan table: one change serves all.
        let dm = self.parts[0].manhattan_change(label as usize & 31, from & 31, to & 31);
        for (part, after) in self.parts.iter().zip(&mut next) {
            part.advance(after, label, from, to, dm);
        }
        let mut value = 0;
        for (part, after) in self.parts.iter().zip(&mut next) {
            value = value.max(part.settle(after, label, limit));
            if value > limit {
                // Pruned: the other parts' states are never read.
                break;
            }
        }
        (value, next)
    }
}
