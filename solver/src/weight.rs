//! [`Weight`]: the factor `w` of a bounded-suboptimal search, and the units its bounds are in.
//!
//! A weighted search (WIDA\*) prunes on `f' = g + w·h` instead of `g + h`. With `w = num/den`
//! in lowest terms, the engine works on the integer `den·g + num·h` (for `w = 1`, plain
//! `g + h`): every bound, next bound and piece `f` of a weighted solver is in those units.
//!
//! Why its answers are within `w` of optimal: on an optimal path every node has
//! `den·g + num·h <= num·(g + h) <= num·C*` (an admissible `h`, `num >= den`), so each
//! iteration's bound stays at most `num·C*` until a goal is met, and a goal accepted under bound
//! `B` has length at most `B / den <= w·C*`, whichever subtree it was met in. The same
//! inequality turns a bound into a lower bound: when every bound below `B` is exhausted, some
//! node of an optimal path had `f' >= B`, so `C* >= ⌈B / num⌉` ([`Weight::lower_bound`]).

use std::fmt;
use std::str::FromStr;

/// The largest factor a request may ask for.
pub const MAX_WEIGHT: f64 = 10.0;

/// A factor `w >= 1`, with at most two decimals, held as a fraction in lowest terms.
///
/// ```
/// use npuzzle_solver::Weight;
/// let w: Weight = "1.2".parse().unwrap();
/// assert_eq!((w.num(), w.den()), (6, 5));
/// assert_eq!(w.f(10, 5), 80); // 5·10 + 6·5: f' = 16 in units of 1/5
/// assert_eq!(w.lower_bound(80), 14); // C* >= ⌈80 / 6⌉
/// assert!(Weight::OPTIMAL.is_optimal());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Weight {
    num: u32,
    den: u32,
}

/// A factor a request cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadWeight {
    #[error("the factor {0} is not a number")]
    NotANumber(String),
    #[error("the factor {0} is below 1 (1 asks for an optimal path)")]
    BelowOne(String),
    #[error("the factor {0} is above {MAX_WEIGHT}")]
    TooLarge(String),
    #[error("the factor {0} has more than two decimals")]
    TooPrecise(String),
}

impl Weight {
    /// `w = 1`: an optimal search.
    pub const OPTIMAL: Weight = Weight { num: 1, den: 1 };

    /// `w` as given (a request's factor); 0 is read as 1, as a field left unset.
    pub fn new(w: f64) -> Result<Weight, BadWeight> {
        if w.is_nan() {
            return Err(BadWeight::NotANumber(w.to_string()));
        }
        if w == 0.0 {
            return Ok(Weight::OPTIMAL);
        }
        if w < 1.0 {
            return Err(BadWeight::BelowOne(w.to_string()));
        }
        if w > MAX_WEIGHT {
            return Err(BadWeight::TooLarge(w.to_string()));
        }
        let hundredths = (w * 100.0).round();
        if (hundredths - w * 100.0).abs() > 1e-6 {
            return Err(BadWeight::TooPrecise(w.to_string()));
        }
        Ok(Weight::from_ratio(hundredths as u32, 100))
    }

    /// `w` in hundredths, as the cluster's messages carry it (0 is read as 1).
    pub fn from_hundredths(hundredths: u32) -> Result<Weight, BadWeight> {
        Weight::new(f64::from(hundredths) / 100.0)
    }

    /// `w` in hundredths (100 for an optimal search).
    pub fn hundredths(self) -> u32 {
        self.num * 100 / self.den
    }

    /// `num / den` in lowest terms (`num >= den >= 1`, as [`Weight::new`] guarantees).
    fn from_ratio(num: u32, den: u32) -> Weight {
        let (mut a, mut b) = (num, den);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        Weight {
            num: num / a,
            den: den / a,
        }
    }

    pub fn num(self) -> u32 {
        self.num
    }

    pub fn den(self) -> u32 {
        self.den
    }

    /// `w` as a number.
    pub fn factor(self) -> f64 {
        f64::from(self.num) / f64::from(self.den)
    }

    pub fn is_optimal(self) -> bool {
        self.num == self.den
    }

    /// `den·g + num·h`: a node's `f'` in the bound's units.
    #[inline(always)]
    pub fn f(self, g: u32, h: u32) -> u32 {
        self.den * g + self.num * h
    }

    /// The least solution length a bound proves once every bound below it is exhausted:
    /// `⌈bound / num⌉` (the bound itself for an optimal search).
    pub fn lower_bound(self, bound: u32) -> u32 {
        bound.div_ceil(self.num)
    }

    /// The longest path a goal accepted under `bound` can have: `⌊bound / den⌋`.
    pub fn longest_under(self, bound: u32) -> u32 {
        bound / self.den
    }

    /// Whether a path of `length` moves is within this factor of a proven `lower_bound`:
    /// `length <= w · lower_bound`.
    pub fn admits(self, length: u32, lower_bound: u32) -> bool {
        u64::from(length) * u64::from(self.den) <= u64::from(lower_bound) * u64::from(self.num)
    }
}

/// By the factor's value (fractions in lowest terms are compared across, not field by field).
impl Ord for Weight {
    fn cmp(&self, other: &Weight) -> std::cmp::Ordering {
        (u64::from(self.num) * u64::from(other.den))
            .cmp(&(u64::from(other.num) * u64::from(self.den)))
    }
}

impl PartialOrd for Weight {
    fn partial_cmp(&self, other: &Weight) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Default for Weight {
    fn default() -> Weight {
        Weight::OPTIMAL
    }
}

impl fmt::Display for Weight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hundredths = self.hundredths();
        if hundredths.is_multiple_of(100) {
            write!(f, "{}", hundredths / 100)
        } else if hundredths.is_multiple_of(10) {
            write!(f, "{}.{}", hundredths / 100, hundredths % 100 / 10)
        } else {
            write!(f, "{}.{:02}", hundredths / 100, hundredths % 100)
        }
    }
}

impl FromStr for Weight {
    type Err = BadWeight;

    fn from_str(s: &str) -> Result<Weight, BadWeight> {
        let w: f64 = s
            .trim()
            .parse()
            .map_err(|_| BadWeight::NotANumber(s.to_string()))?;
        if !w.is_finite() {
            return Err(BadWeight::NotANumber(s.to_string()));
        }
        Weight::new(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_parse_to_lowest_terms_and_print_back() {
        for (text, num, den) in [("1", 1, 1), ("1.2", 6, 5), ("1.25", 5, 4), ("2", 2, 1)] {
            let w: Weight = text.parse().expect("a factor");
            assert_eq!((w.num(), w.den()), (num, den), "{text}");
            assert_eq!(w.to_string(), text);
        }
        assert_eq!(
            "1.10".parse::<Weight>().map(|w| w.to_string()),
            Ok("1.1".into())
        );
    }

    #[test]
    fn factors_out_of_range_are_refused_by_name() {
        assert!(matches!(
            "0.9".parse::<Weight>(),
            Err(BadWeight::BelowOne(_))
        ));
        assert!(matches!(
            "11".parse::<Weight>(),
            Err(BadWeight::TooLarge(_))
        ));
        assert!(matches!(
            "1.234".parse::<Weight>(),
            Err(BadWeight::TooPrecise(_))
        ));
        assert!(matches!(
            "fast".parse::<Weight>(),
            Err(BadWeight::NotANumber(_))
        ));
        assert!(matches!(
            "inf".parse::<Weight>(),
            Err(BadWeight::NotANumber(_))
        ));
        assert_eq!(Weight::new(0.0), Ok(Weight::OPTIMAL));
    }

    #[test]
    fn factors_compare_by_value() {
        let w = |s: &str| s.parse::<Weight>().expect("a factor");
        assert!(w("3") > w("1.1"));
        assert!(w("1.5") < w("2") && w("1.25") > w("1.2"));
        assert!(Weight::OPTIMAL < w("1.01"));
        assert_eq!(w("1.50").cmp(&w("1.5")), std::cmp::Ordering::Equal);
    }

    #[test]
    fn an_optimal_weight_keeps_plain_f_and_bounds() {
        let w = Weight::OPTIMAL;
        assert_eq!(w.f(7, 9), 16);
        assert_eq!(w.lower_bound(52), 52);
        assert_eq!(w.longest_under(52), 52);
        assert!(w.admits(52, 52) && !w.admits(54, 52));
    }

    #[test]
    fn a_weight_admits_lengths_up_to_its_factor_of_the_bound() {
        let w: Weight = "1.2".parse().expect("a factor");
        assert!(w.admits(120, 100));
        assert!(!w.admits(121, 100));
        assert_eq!(w.lower_bound(600), 100);
        assert_eq!(w.lower_bound(601), 101);
        assert_eq!(w.longest_under(600), 120);
    }
}
