//! The built-in partitions of a board's tiles into patterns.

use super::PdbError;
use crate::shape::Shape;

/// A named split of a board's tiles into patterns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    pub name: String,
    pub shape: Shape,
    pub patterns: Vec<Vec<u8>>,
}

impl Partition {
    /// The built-in partitions: `4x4` `5-5-5`, `6-6-3` and `7-8`, `5x5` `6-6-6-6`, and small ones for
    /// tests (`3x3` `4-4`, `2x4` / `4x2` `3-4`). All for the blank on cell 0.
    pub fn named(shape: Shape, name: &str) -> Result<Partition, PdbError> {
        let (w, h) = (shape.width(), shape.height());
        let patterns: Vec<Vec<u8>> = match ((w, h), name) {
            ((4, 4), "7-8") => vec![(1..=7).collect(), (8..=15).collect()],
            // Column-major groups. Of the layouts tried (row-major groups, blocks), these
            // generate the fewest nodes on Korf's 100 with the reflected lookup:
            // 6-6-3 406 k per instance (row-major: 898 k), 5-5-5 1.12 M (blocks: 3.73 M).
            ((4, 4), "6-6-3") => vec![
                vec![1, 4, 5, 8, 9, 12],
                vec![2, 3, 6, 7, 10, 11],
                vec![13, 14, 15],
            ],
            ((4, 4), "5-5-5") => vec![
                vec![1, 4, 5, 8, 9],
                vec![2, 3, 6, 7, 11],
                vec![10, 12, 13, 14, 15],
            ],
            ((5, 5), "6-6-6-6") => vec![
                vec![1, 2, 5, 6, 7, 10],
                vec![3, 4, 8, 9, 13, 14],
                vec![11, 12, 15, 16, 17, 20],
                vec![18, 19, 21, 22, 23, 24],
            ],
            ((3, 3), "4-4") => vec![vec![1, 2, 3, 4], vec![5, 6, 7, 8]],
            ((2, 4), "3-4") | ((4, 2), "3-4") => vec![vec![1, 2, 3], vec![4, 5, 6, 7]],
            _ => {
                return Err(PdbError::Pattern(format!(
                    "no partition {name:?} for {shape} (known: 4x4 5-5-5, 6-6-3 and 7-8, 5x5 6-6-6-6, 3x3 4-4, 2x4 and 4x2 3-4)"
                )));
            }
        };
        Ok(Partition {
            name: name.to_string(),
            shape,
            patterns,
        })
    }
}
