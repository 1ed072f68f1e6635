//! Board shapes: width × height, each side in `2..=5`.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// The most cells a board may have (5x5).
pub const MAX_CELLS: usize = 25;

/// The width and height of a board; each side is in `2..=5`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Shape {
    width: u8,
    height: u8,
}

/// Why a shape was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ShapeError {
    #[error("board size {width}x{height} is not supported: width and height must each be 2 to 5")]
    OutOfRange { width: usize, height: usize },
    #[error("board size {0:?} is not of the form WxH (for example 4x4 or 3x2)")]
    Malformed(String),
}

impl Shape {
    /// Smallest supported side.
    pub const MIN_SIDE: usize = 2;
    /// Largest supported side.
    pub const MAX_SIDE: usize = 5;

    /// A `width` × `height` shape, or an error naming both numbers.
    pub fn new(width: usize, height: usize) -> Result<Shape, ShapeError> {
        let side_ok = |s: usize| (Self::MIN_SIDE..=Self::MAX_SIDE).contains(&s);
        if side_ok(width) && side_ok(height) {
            Ok(Shape {
                width: width as u8,
                height: height as u8,
            })
        } else {
            Err(ShapeError::OutOfRange { width, height })
        }
    }

    /// The square shape with `cells` cells (4, 9, 16 or 25), if there is one.
    pub fn infer(cells: usize) -> Option<Shape> {
        match cells {
            4 => Some(Shape::square(2)),
            9 => Some(Shape::square(3)),
            16 => Some(Shape::square(4)),
            25 => Some(Shape::square(5)),
            _ => None,
        }
    }

    fn square(side: u8) -> Shape {
        Shape {
            width: side,
            height: side,
        }
    }

    pub fn width(self) -> usize {
        self.width as usize
    }

    pub fn height(self) -> usize {
        self.height as usize
    }

    /// Number of cells, blank included.
    pub fn cells(self) -> usize {
        self.width() * self.height()
    }

    /// Row of a row-major cell index.
    pub fn row(self, pos: usize) -> usize {
        pos / self.width()
    }

    /// Column of a row-major cell index.
    pub fn col(self, pos: usize) -> usize {
        pos % self.width()
    }

    /// Manhattan distance between two cells.
    pub fn distance(self, a: usize, b: usize) -> usize {
        self.row(a).abs_diff(self.row(b)) + self.col(a).abs_diff(self.col(b))
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

impl FromStr for Shape {
    type Err = ShapeError;

    /// Parses `WxH` (also `W*H` or `W×H`), e.g. `4x4`, `3x2`.
    fn from_str(s: &str) -> Result<Shape, ShapeError> {
        let malformed = || ShapeError::Malformed(s.to_string());
        let (w, h) = s
            .trim()
            .split_once(['x', 'X', '*', '×'])
            .ok_or_else(malformed)?;
        let w: usize = w.trim().parse().map_err(|_| malformed())?;
        let h: usize = h.trim().parse().map_err(|_| malformed())?;
        Shape::new(w, h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_shapes() {
        let s: Shape = "4x3".parse().unwrap();
        assert_eq!((s.width(), s.height(), s.cells()), (4, 3, 12));
        assert_eq!(s.to_string(), "4x3");
        assert_eq!("5X5".parse::<Shape>().unwrap(), Shape::new(5, 5).unwrap());
    }

    #[test]
    fn rejects_out_of_range_and_malformed_shapes() {
        assert_eq!(
            "6x4".parse::<Shape>(),
            Err(ShapeError::OutOfRange {
                width: 6,
                height: 4
            })
        );
        assert!(matches!(
            "1x9".parse::<Shape>(),
            Err(ShapeError::OutOfRange { .. })
        ));
        assert!(matches!(
            "44".parse::<Shape>(),
            Err(ShapeError::Malformed(_))
        ));
        assert!(matches!(
            "ax4".parse::<Shape>(),
            Err(ShapeError::Malformed(_))
        ));
    }

    #[test]
    fn infers_only_square_shapes() {
        assert_eq!(Shape::infer(16), Some(Shape::new(4, 4).unwrap()));
        assert_eq!(Shape::infer(12), None);
    }
}
