//! What a load test sends: the kinds of request ([`Kind`]), their weights ([`Mix`], the
//! `--mix` text) and the whole plan ([`LoadPlan`]), checked before anything is sent.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use npuzzle_solver::{EXACT_MAX_CELLS, Shape};
use rand::Rng;

use super::LoadError;

/// The four kinds of request in the mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A board of the warm-up set, sent again: the coordinator answers from its cache.
    Cached,
    /// A solvable board not sent before.
    New,
    /// A malformed request, built directly as a wire message.
    Invalid,
    /// A solvable board with two tiles swapped.
    Unsolvable,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Cached, Kind::New, Kind::Invalid, Kind::Unsolvable];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Cached => "cached",
            Kind::New => "new",
            Kind::Invalid => "invalid",
            Kind::Unsolvable => "unsolvable",
        }
    }
}

/// Relative weights of the kinds, e.g. `cached=40,new=40,invalid=10,unsolvable=10`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mix {
    pub cached: u32,
    pub new: u32,
    pub invalid: u32,
    pub unsolvable: u32,
}

/// The default mix, as `--mix` writes it.
pub const DEFAULT_MIX: &str = "cached=40,new=40,invalid=10,unsolvable=10";

impl Default for Mix {
    fn default() -> Self {
        Mix {
            cached: 40,
            new: 40,
            invalid: 10,
            unsolvable: 10,
        }
    }
}

impl Mix {
    pub fn weight(&self, kind: Kind) -> u32 {
        match kind {
            Kind::Cached => self.cached,
            Kind::New => self.new,
            Kind::Invalid => self.invalid,
            Kind::Unsolvable => self.unsolvable,
        }
    }

    pub(super) fn total(&self) -> u64 {
        Kind::ALL.iter().map(|&k| self.weight(k) as u64).sum()
    }

    /// A kind drawn with these weights (the total must not be 0).
    pub(super) fn draw(&self, rng: &mut impl Rng) -> Kind {
        let mut r = rng.random_range(0..self.total());
        for kind in Kind::ALL {
            let w = self.weight(kind) as u64;
            if r < w {
                return kind;
            }
            r -= w;
        }
        Kind::Unsolvable
    }
}

/// Why a `--mix` text cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MixError {
    #[error("bad mix entry {0:?}: use KIND=WEIGHT, e.g. {DEFAULT_MIX}")]
    Entry(String),
    #[error("unknown kind {0:?} in the mix (the kinds: cached, new, invalid, unsolvable)")]
    UnknownKind(String),
    #[error("{0} is named twice in the mix")]
    Repeated(&'static str),
    #[error("the mix's weights are all 0")]
    Empty,
}

impl FromStr for Mix {
    type Err = MixError;

    /// `KIND=WEIGHT` entries separated by commas; a kind not named weighs 0.
    fn from_str(s: &str) -> Result<Mix, MixError> {
        let mut mix = Mix {
            cached: 0,
            new: 0,
            invalid: 0,
            unsolvable: 0,
        };
        let mut named = HashSet::new();
        for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, weight) = entry
                .split_once('=')
                .ok_or_else(|| MixError::Entry(entry.to_string()))?;
            let weight: u32 = weight
                .trim()
                .parse()
                .map_err(|_| MixError::Entry(entry.to_string()))?;
            let kind = Kind::ALL
                .into_iter()
                .find(|k| k.name() == name.trim())
                .ok_or_else(|| MixError::UnknownKind(name.trim().to_string()))?;
            if !named.insert(kind) {
                return Err(MixError::Repeated(kind.name()));
            }
            match kind {
                Kind::Cached => mix.cached = weight,
                Kind::New => mix.new = weight,
                Kind::Invalid => mix.invalid = weight,
                Kind::Unsolvable => mix.unsolvable = weight,
            }
        }
        if mix.total() == 0 {
            return Err(MixError::Empty);
        }
        Ok(mix)
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = Kind::ALL
            .iter()
            .map(|&k| format!("{}={}", k.name(), self.weight(k)))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// What to send, how hard, and for how long.
#[derive(Clone, Debug)]
pub struct LoadPlan {
    /// The shape of every well-formed board (towards the blank-last goal).
    pub shape: Shape,
    /// Boards are the ends of random walks of this many moves from the goal; `None`: drawn
    /// uniformly, which only boards of at most 9 cells allow (their optimum comes from a table;
    /// a uniform 15-puzzle would take far too long to check).
    pub walk: Option<usize>,
    /// Requests in the measured run (the warm-up comes on top).
    pub requests: usize,
    /// Concurrent client tasks, each sending its next request when it has its answer.
    pub clients: usize,
    /// gRPC connections the clients share, round robin; 0: one per client.
    pub connections: usize,
    /// Distinct boards sent once before the measured run; the `cached` kind repeats them.
    pub warm: usize,
    pub mix: Mix,
    /// Draws the whole workload (and the retry jitter).
    pub seed: u64,
    /// No request is started after this long (those not started are reported, not lost).
    pub duration: Duration,
    /// A request with no answer this long after its first try (retry waits included) is lost.
    pub timeout: Duration,
    /// The longest wait before a retry, whatever the `retry-after-ms` hint says.
    pub max_retry_wait: Duration,
}

impl Default for LoadPlan {
    fn default() -> Self {
        LoadPlan {
            shape: Shape::new(3, 3).unwrap_or_else(|_| unreachable!("3x3 is a shape")),
            walk: None,
            requests: 2000,
            clients: 64,
            connections: 0,
            warm: 200,
            mix: Mix::default(),
            seed: 1,
            duration: Duration::from_secs(60),
            timeout: Duration::from_secs(30),
            max_retry_wait: Duration::from_secs(1),
        }
    }
}

impl LoadPlan {
    /// Refuses plans that cannot be checked or make no sense.
    pub fn check(&self) -> Result<(), LoadError> {
        if self.mix.total() == 0 {
            return Err(MixError::Empty.into());
        }
        if self.walk.is_none() && self.shape.cells() > EXACT_MAX_CELLS {
            return Err(LoadError::NeedsWalk { shape: self.shape });
        }
        if self.warm == 0 && self.mix.cached > 0 && self.requests > 0 {
            return Err(LoadError::NothingToRepeat);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_reads_named_weights_and_refuses_nonsense() {
        assert_eq!(DEFAULT_MIX.parse::<Mix>(), Ok(Mix::default()));
        assert_eq!(Mix::default().to_string(), DEFAULT_MIX);
        let only_new: Mix = "new=1".parse().unwrap();
        assert_eq!((only_new.cached, only_new.new), (0, 1));
        assert!(matches!(
            "old=3".parse::<Mix>(),
            Err(MixError::UnknownKind(_))
        ));
        assert!(matches!("new=x".parse::<Mix>(), Err(MixError::Entry(_))));
        assert!(matches!(
            "new=1,new=2".parse::<Mix>(),
            Err(MixError::Repeated("new"))
        ));
        assert_eq!("new=0".parse::<Mix>(), Err(MixError::Empty));
    }
}
