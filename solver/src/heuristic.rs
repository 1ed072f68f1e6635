//! Heuristics: lower bounds on the number of moves left, updated incrementally in the hot loop.
//!
//! Heuristics see the board **relabelled by the goal**: each cell holds its tile's goal cell (its
//! *label*), so every goal looks like the identity `0 1 2 …` and one table serves any goal. The
//! blank's label is the blank's goal cell; heuristics ignore it.

use std::fmt;
use std::str::FromStr;

use crate::shape::Shape;

/// A lower bound on the moves from a state to the goal, with an incremental update per move.
///
/// # Preconditions
///
/// - **Admissible**: never above the true distance to the goal. Otherwise the search may return
///   a path that is not the shortest.
/// - **Zero at the goal**: the search only inspects a state for the goal when `h == 0` (and then
///   checks every cell, so a heuristic that is also 0 elsewhere is merely slower).
/// - **Consistent** (changes by at most 1 per move) is not needed for optimality, but with it and
///   the puzzle's parity the bound rises in steps of exactly 2 and no iteration is wasted.
pub trait Heuristic {
    /// Whatever the heuristic carries from a state to its children (e.g. line codes).
    type State: Copy;

    /// Evaluates a relabelled board from scratch. `cells[p]` is the label on cell `p`.
    fn evaluate(&self, cells: &[u8]) -> (u32, Self::State);

    /// The value after the tile with `label` slid from cell `from` into cell `to` (the old
    /// blank), given the value `h` and `state` before the move. `vertical` tells whether the
    /// tile changed rows (the search knows it at compile time, so implementations may branch
    /// on it for free).
    fn after_move(
        &self,
        h: u32,
        state: &Self::State,
        label: u8,
        from: usize,
        to: usize,
        vertical: bool,
    ) -> (u32, Self::State);

    /// Like [`Heuristic::after_move`], for a child that is pruned unless its value is at most
    /// `limit`: an implementation may stop as soon as it knows the value exceeds `limit` and
    /// return any value above it (the child's state is then never used).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn after_move_within(
        &self,
        h: u32,
        state: &Self::State,
        label: u8,
        from: usize,
        to: usize,
        vertical: bool,
        _limit: u32,
    ) -> (u32, Self::State) {
        self.after_move(h, state, label, from, to, vertical)
    }
}

/// Which heuristic a search uses.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum HeuristicKind {
    /// Sum of the tiles' Manhattan distances to their goal cells.
    Manhattan,
    /// Manhattan plus 2 per tile that must leave its goal row or column to let another pass.
    #[default]
    LinearConflict,
    /// The exact distance from a table of every state (boards of at most 9 cells).
    Exact,
    /// Additive pattern databases (tables built beforehand; see [`crate::Solver::with_pdb`]).
    Pdb,
}

impl HeuristicKind {
    pub const ALL: [HeuristicKind; 3] = [
        HeuristicKind::Manhattan,
        HeuristicKind::LinearConflict,
        HeuristicKind::Exact,
    ];

    /// Short name: `md`, `lc` or `exact`.
    pub fn name(self) -> &'static str {
        match self {
            HeuristicKind::Manhattan => "md",
            HeuristicKind::LinearConflict => "lc",
            HeuristicKind::Exact => "exact",
            HeuristicKind::Pdb => "pdb",
        }
    }

    /// Whether this heuristic works on boards of `shape`.
    pub fn supports(self, shape: Shape) -> bool {
        match self {
            HeuristicKind::Exact => shape.cells() <= crate::exact::EXACT_MAX_CELLS,
            // Only with tables, which `Solver::new` does not have.
            HeuristicKind::Pdb => false,
            _ => true,
        }
    }

    /// The strongest heuristic for `shape`: exact distances up to 9 cells, else linear conflict.
    pub fn best_for(shape: Shape) -> HeuristicKind {
        if HeuristicKind::Exact.supports(shape) {
            HeuristicKind::Exact
        } else {
            HeuristicKind::LinearConflict
        }
    }
}

impl fmt::Display for HeuristicKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown heuristic name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown heuristic {0:?}: expected md (Manhattan), lc (linear conflict), exact (boards of up to 9 cells) or pdb (pattern databases)"
)]
pub struct UnknownHeuristic(pub String);

impl FromStr for HeuristicKind {
    type Err = UnknownHeuristic;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "md" | "manhattan" => Ok(HeuristicKind::Manhattan),
            "lc" | "linear-conflict" | "linear_conflict" => Ok(HeuristicKind::LinearConflict),
            "exact" => Ok(HeuristicKind::Exact),
            "pdb" => Ok(HeuristicKind::Pdb),
            _ => Err(UnknownHeuristic(s.to_string())),
        }
    }
}

/// Manhattan distance: admissible because every move shifts one tile by one cell.
#[derive(Clone, Debug)]
pub struct Manhattan {
    /// `distance[label][cell]`; zero for the blank's label. Padded to 32 so that masked
    /// indices need no bounds checks in the hot loop.
    distance: [[u8; 32]; 32],
    cells: usize,
    blank_label: u8,
}

impl Manhattan {
    /// The table for boards of `shape` whose blank belongs on cell `blank_label`.
    pub fn new(shape: Shape, blank_label: usize) -> Manhattan {
        let mut distance = [[0u8; 32]; 32];
        for (label, row) in distance.iter_mut().enumerate().take(shape.cells()) {
            if label == blank_label {
                continue;
            }
            for (cell, d) in row.iter_mut().enumerate().take(shape.cells()) {
                *d = shape.distance(label, cell) as u8;
            }
        }
        Manhattan {
            distance,
            cells: shape.cells(),
            blank_label: blank_label as u8,
        }
    }

    fn total(&self, cells: &[u8]) -> u32 {
        cells[..self.cells]
            .iter()
            .enumerate()
            .filter(|&(_, &l)| l != self.blank_label)
            .map(|(p, &l)| self.distance[l as usize][p] as u32)
            .sum()
    }

    #[inline(always)]
    fn delta(&self, h: u32, label: u8, from: usize, to: usize) -> u32 {
        let row = &self.distance[label as usize & 31];
        h + row[to & 31] as u32 - row[from & 31] as u32
    }
}

impl Heuristic for Manhattan {
    type State = ();

    fn evaluate(&self, cells: &[u8]) -> (u32, ()) {
        (self.total(cells), ())
    }

    #[inline(always)]
    fn after_move(&self, h: u32, _: &(), label: u8, from: usize, to: usize, _: bool) -> (u32, ()) {
        (self.delta(h, label, from, to), ())
    }
}

/// Manhattan distance plus linear conflicts (Hansson, Mayer & Yung 1992).
///
/// Tiles that sit in their goal row (column) in the reverse order of their goal cells must pass
/// each other; for each line, `2 × (tiles in the line − longest increasing run of them)` is added,
/// the fewest tiles that must step out of the line and back. Row and column terms count only
/// vertical and horizontal detours respectively, so their sum with Manhattan stays admissible.
///
/// Each line is tracked as a base-`(len + 1)` code (a digit per cell: 0 for a tile that does not
/// belong to this line, else 1 + its goal index along the line), so a move updates two codes with
/// table lookups.
#[derive(Clone, Debug)]
pub struct LinearConflict {
    manhattan: Manhattan,
    row_of: [u8; 32],
    col_of: [u8; 32],
    /// `row_weight[label][cell]`: that label's digit on that cell, times the cell's place value
    /// in its row code.
    row_weight: [[u16; 32]; 32],
    col_weight: [[u16; 32]; 32],
    /// Conflict penalty (already doubled) by row code and by column code; 2^16 entries so that
    /// any `u16` code indexes without a bounds check (codes stay below 6^5 = 7776).
    row_penalty: Box<[u8; 1 << 16]>,
    col_penalty: Box<[u8; 1 << 16]>,
    height: usize,
    width: usize,
}

/// The code of each line: rows then columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineCodes {
    /// Eight slots so that `& 7` indexes without a bounds check; lines past the board stay 0.
    rows: [u16; 8],
    cols: [u16; 8],
}

impl LinearConflict {
    pub fn new(shape: Shape, blank_label: usize) -> LinearConflict {
        let (w, h) = (shape.width(), shape.height());
        let mut row_of = [0u8; 32];
        let mut col_of = [0u8; 32];
        let mut row_weight = [[0u16; 32]; 32];
        let mut col_weight = [[0u16; 32]; 32];
        for cell in 0..shape.cells() {
            row_of[cell] = shape.row(cell) as u8;
            col_of[cell] = shape.col(cell) as u8;
        }
        for label in 0..shape.cells() {
            if label == blank_label {
                continue;
            }
            let (goal_row, goal_col) = (shape.row(label), shape.col(label));
            for cell in 0..shape.cells() {
                let (r, c) = (shape.row(cell), shape.col(cell));
                if r == goal_row {
                    row_weight[label][cell] = (goal_col as u16 + 1) * (w as u16 + 1).pow(c as u32);
                }
                if c == goal_col {
                    col_weight[label][cell] = (goal_row as u16 + 1) * (h as u16 + 1).pow(r as u32);
                }
            }
        }
        LinearConflict {
            manhattan: Manhattan::new(shape, blank_label),
            row_of,
            col_of,
            row_weight,
            col_weight,
            row_penalty: penalty_table(w),
            col_penalty: penalty_table(h),
            height: h,
            width: w,
        }
    }

    fn codes(&self, cells: &[u8]) -> LineCodes {
        let mut codes = LineCodes::default();
        for (cell, &label) in cells.iter().enumerate() {
            let l = label as usize;
            codes.rows[self.row_of[cell] as usize] += self.row_weight[l][cell];
            codes.cols[self.col_of[cell] as usize] += self.col_weight[l][cell];
        }
        codes
    }

    fn penalty(&self, codes: &LineCodes) -> u32 {
        let rows: u32 = codes.rows[..self.height]
            .iter()
            .map(|&c| self.row_penalty[c as usize] as u32)
            .sum();
        let cols: u32 = codes.cols[..self.width]
            .iter()
            .map(|&c| self.col_penalty[c as usize] as u32)
            .sum();
        rows + cols
    }
}

/// `2 × (k − LIS)` for every code of a line of `len` cells.
fn penalty_table(len: usize) -> Box<[u8; 1 << 16]> {
    let base = len + 1;
    let size = base.pow(len as u32);
    let mut table = Box::new([0u8; 1 << 16]);
    for (code, entry) in table.iter_mut().enumerate().take(size) {
        *entry = {
            let mut c = code;
            let mut goals = Vec::with_capacity(len);
            for _ in 0..len {
                let digit = c % base;
                c /= base;
                if digit > 0 {
                    goals.push(digit - 1);
                }
            }
            // Longest strictly increasing subsequence; lines have at most 5 tiles.
            let mut best = vec![1usize; goals.len()];
            for i in 0..goals.len() {
                for j in 0..i {
                    if goals[j] < goals[i] {
                        best[i] = best[i].max(best[j] + 1);
                    }
                }
            }
            let lis = best.iter().copied().max().unwrap_or(0);
            (2 * (goals.len() - lis)) as u8
        };
    }
    table
}

impl Heuristic for LinearConflict {
    type State = LineCodes;

    fn evaluate(&self, cells: &[u8]) -> (u32, LineCodes) {
        let codes = self.codes(cells);
        (self.manhattan.total(cells) + self.penalty(&codes), codes)
    }

    #[inline(always)]
    fn after_move(
        &self,
        h: u32,
        codes: &LineCodes,
        label: u8,
        from: usize,
        to: usize,
        vertical: bool,
    ) -> (u32, LineCodes) {
        let (l, from, to) = (label as usize & 31, from & 31, to & 31);
        let mut next = *codes;
        let mut h = self.manhattan.delta(h, label, from, to);
        // Line indices are below 5 by construction; the mask keeps the hot loop check-free.
        let (rf, rt) = (self.row_of[from] as usize & 7, self.row_of[to] as usize & 7);
        let (cf, ct) = (self.col_of[from] as usize & 7, self.col_of[to] as usize & 7);
        if vertical {
            // Vertical slide: the tile leaves row `rf` for row `rt`; its column keeps its order.
            next.rows[rf] -= self.row_weight[l][from];
            next.rows[rt] += self.row_weight[l][to];
            let p = &self.row_penalty;
            h = h + p[next.rows[rf] as usize] as u32 + p[next.rows[rt] as usize] as u32
                - p[codes.rows[rf] as usize] as u32
                - p[codes.rows[rt] as usize] as u32;
            next.cols[cf] = next.cols[cf]
                .wrapping_sub(self.col_weight[l][from])
                .wrapping_add(self.col_weight[l][to]);
        } else {
            next.cols[cf] -= self.col_weight[l][from];
            next.cols[ct] += self.col_weight[l][to];
            let p = &self.col_penalty;
            h = h + p[next.cols[cf] as usize] as u32 + p[next.cols[ct] as usize] as u32
                - p[codes.cols[cf] as usize] as u32
                - p[codes.cols[ct] as usize] as u32;
            next.rows[rf] = next.rows[rf]
                .wrapping_sub(self.row_weight[l][from])
                .wrapping_add(self.row_weight[l][to]);
        }
        (h, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn penalty_counts_tiles_that_must_leave_the_line() {
        let t = penalty_table(3);
        let code = |d: [usize; 3]| d[0] + 4 * d[1] + 16 * d[2];
        assert_eq!(t[code([1, 2, 3])], 0);
        assert_eq!(t[code([2, 1, 0])], 2);
        assert_eq!(t[code([3, 2, 1])], 4);
        assert_eq!(t[code([3, 0, 1])], 2);
        assert_eq!(t[code([0, 0, 2])], 0);
    }

    #[test]
    fn incremental_update_matches_full_evaluation() {
        // Walk a fixed pseudo-random path on 4x3 and compare both heuristics at every step.
        let shape = Shape::new(4, 3).unwrap();
        let blank_label = 11;
        let md = Manhattan::new(shape, blank_label);
        let lc = LinearConflict::new(shape, blank_label);
        let mut cells: Vec<u8> = (0..12).collect();
        let mut blank = 11usize;
        let (mut hm, _) = md.evaluate(&cells);
        let (mut hl, mut codes) = lc.evaluate(&cells);
        let mut seed = 12345u64;
        for _ in 0..2000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mv = crate::Move::ALL[(seed >> 33) as usize % 4];
            let Some(to) = crate::board::step(shape, blank, mv) else {
                continue;
            };
            let label = cells[to];
            let vertical = shape.row(to) != shape.row(blank);
            hm = md.after_move(hm, &(), label, to, blank, vertical).0;
            (hl, codes) = lc.after_move(hl, &codes, label, to, blank, vertical);
            cells.swap(blank, to);
            blank = to;
            assert_eq!(hm, md.evaluate(&cells).0);
            assert_eq!((hl, codes), lc.evaluate(&cells));
            assert!(hl >= hm);
        }
    }
}
