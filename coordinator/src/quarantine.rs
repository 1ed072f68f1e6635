//! Workers dropped for misbehaving, kept out for a while. No I/O: time is passed in.
//!
//! A worker dropped for a forged result or for failing unit after unit is *quarantined*: its
//! joins are refused until [`Quarantine::duration`] has passed, so that a broken or hostile
//! worker cannot come straight back (a reconnect storm) and take units again. A worker that
//! refused units it claimed to serve (`UNSUPPORTED` for its pattern databases) is not refused,
//! but its claim is *revoked*: the shapes it refused are struck from its hellos for as long.
//!
//! A worker is known by its [`Origin`]: its peer address and the name in its hello. Names are
//! chosen by the worker, so an address with [`MAX_NAMES_PER_ADDRESS`] names quarantined is
//! quarantined as a whole (a worker cannot escape by renaming itself), while honest workers on
//! the same host as one broken worker still join.
//!
//! Joins are also rationed per address ([`JOINS_PER_SECOND`], bursts of [`JOIN_BURST`]): a
//! worker joins once and stays, so a storm of joins (fresh names, huge hellos, claims made and
//! refused again and again) is refused before it costs more than a few log lines.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use npuzzle_coordinator::quarantine::{Origin, Quarantine};
//!
//! let mut q = Quarantine::new(Duration::from_secs(60));
//! let now = Instant::now();
//! let bad = Origin::new(Some("10.0.0.7".parse().unwrap()), "w7");
//! q.add(&bad, now);
//! assert!(q.refuses(&bad, now).is_some());
//! assert!(q.refuses(&Origin::new(Some("10.0.0.7".parse().unwrap()), "w8"), now).is_none());
//! assert!(q.refuses(&bad, now + Duration::from_secs(61)).is_none());
//! ```

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use npuzzle_solver::Shape;

/// An address with this many names quarantined is quarantined as a whole.
pub const MAX_NAMES_PER_ADDRESS: usize = 4;

/// Entries kept at most (expired ones are purged first; past it, the oldest go): a flood of
/// joins under fresh names cannot grow the coordinator's memory.
pub const MAX_ENTRIES: usize = 4096;

/// Joins one address may make per second, on average…
pub const JOINS_PER_SECOND: f64 = 5.0;
/// …and at once, after a quiet while.
pub const JOIN_BURST: f64 = 20.0;

/// Who a worker is, as far as the coordinator can tell.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    pub address: Option<IpAddr>,
    pub name: String,
}

impl Origin {
    pub fn new(address: Option<IpAddr>, name: &str) -> Origin {
        Origin {
            address,
            name: name.to_string(),
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.address {
            Some(ip) => write!(f, "{:?} at {ip}", self.name),
            None => write!(f, "{:?}", self.name),
        }
    }
}

#[derive(Debug)]
struct Entry {
    /// Refused until then (`None`: not refused, only revocations).
    refused_until: Option<Instant>,
    /// Pattern-database shapes struck from its hellos until then.
    revoked: Vec<(Shape, Instant)>,
    since: Instant,
}

/// The workers kept out, the claims struck, and the joins rationed.
#[derive(Debug)]
pub struct Quarantine {
    duration: Duration,
    entries: HashMap<Origin, Entry>,
    /// Per address: joins left (a token bucket) and when it was last filled.
    joins: HashMap<IpAddr, (f64, Instant)>,
}

impl Quarantine {
    /// Quarantines last `duration` (zero: nothing is ever quarantined or revoked).
    pub fn new(duration: Duration) -> Quarantine {
        Quarantine {
            duration,
            entries: HashMap::new(),
            joins: HashMap::new(),
        }
    }

    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn entry(&mut self, origin: &Origin, now: Instant) -> Option<&mut Entry> {
        if self.duration.is_zero() {
            return None;
        }
        if !self.entries.contains_key(origin) {
            self.make_room(now);
        }
        Some(self.entries.entry(origin.clone()).or_insert(Entry {
            refused_until: None,
            revoked: Vec::new(),
            since: now,
        }))
    }

    fn make_room(&mut self, now: Instant) {
        if self.entries.len() < MAX_ENTRIES {
            return;
        }
        self.purge(now);
        while self.entries.len() >= MAX_ENTRIES {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.since)
                .map(|(o, _)| o.clone())
            else {
                return;
            };
            self.entries.remove(&oldest);
        }
    }

    /// Takes one join of `address`'s ration, or says how long until it has one.
    pub fn admit_join(&mut self, address: Option<IpAddr>, now: Instant) -> Result<(), Duration> {
        let Some(ip) = address else {
            return Ok(());
        };
        if !self.joins.contains_key(&ip) && self.joins.len() >= MAX_ENTRIES {
            // Addresses whose ration is full again are no different from new ones.
            let full_after = Duration::from_secs_f64(JOIN_BURST / JOINS_PER_SECOND);
            self.joins
                .retain(|_, &mut (_, at)| now.saturating_duration_since(at) < full_after);
            if self.joins.len() >= MAX_ENTRIES {
                return Err(Duration::from_secs(1));
            }
        }
        let (tokens, at) = self.joins.entry(ip).or_insert((JOIN_BURST, now));
        let refill = now.saturating_duration_since(*at).as_secs_f64() * JOINS_PER_SECOND;
        *tokens = (*tokens + refill).min(JOIN_BURST);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - *tokens) / JOINS_PER_SECOND))
        }
    }

    /// Drops what has expired.
    pub fn purge(&mut self, now: Instant) {
        self.entries.retain(|_, e| {
            e.revoked.retain(|&(_, until)| until > now);
            e.refused_until.is_some_and(|t| t > now) || !e.revoked.is_empty()
        });
    }

    /// Refuses `origin`'s joins for [`Quarantine::duration`] from `now`.
    pub fn add(&mut self, origin: &Origin, now: Instant) {
        let until = now + self.duration;
        if let Some(e) = self.entry(origin, now) {
            e.refused_until = Some(until);
        }
    }

    /// Strikes `shape` from `origin`'s claims for [`Quarantine::duration`] from `now`.
    pub fn revoke(&mut self, origin: &Origin, shape: Shape, now: Instant) {
        let until = now + self.duration;
        if let Some(e) = self.entry(origin, now) {
            e.revoked.retain(|&(s, _)| s != shape);
            e.revoked.push((shape, until));
        }
    }

    /// How much longer `origin` is refused, if it is: by its own entry, or because its address
    /// has [`MAX_NAMES_PER_ADDRESS`] names quarantined.
    pub fn refuses(&self, origin: &Origin, now: Instant) -> Option<Duration> {
        let refused = |e: &Entry| e.refused_until.filter(|&t| t > now);
        if let Some(until) = self.entries.get(origin).and_then(refused) {
            return Some(until - now);
        }
        let address = origin.address?;
        let mut names = 0;
        let mut last = now;
        for (o, e) in &self.entries {
            if o.address == Some(address)
                && let Some(until) = refused(e)
            {
                names += 1;
                last = last.max(until);
            }
        }
        (names >= MAX_NAMES_PER_ADDRESS).then(|| last - now)
    }

    /// The shapes struck from `origin`'s claims now.
    pub fn revoked(&self, origin: &Origin, now: Instant) -> BTreeSet<Shape> {
        self.entries
            .get(origin)
            .map(|e| {
                e.revoked
                    .iter()
                    .filter(|&&(_, until)| until > now)
                    .map(|&(s, _)| s)
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(ip: &str, name: &str) -> Origin {
        Origin::new(Some(ip.parse().expect("ip")), name)
    }

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn a_quarantined_worker_is_refused_until_it_expires() {
        let mut q = Quarantine::new(MINUTE);
        let t0 = Instant::now();
        let w = origin("10.0.0.1", "w");
        assert_eq!(q.refuses(&w, t0), None);
        q.add(&w, t0);
        assert_eq!(
            q.refuses(&w, t0 + Duration::from_secs(20)),
            Some(Duration::from_secs(40))
        );
        assert_eq!(q.refuses(&w, t0 + MINUTE), None);
        q.purge(t0 + MINUTE);
        assert!(q.is_empty());
    }

    #[test]
    fn renaming_does_not_escape_once_an_address_has_enough_bad_names() {
        let mut q = Quarantine::new(MINUTE);
        let t0 = Instant::now();
        for i in 0..MAX_NAMES_PER_ADDRESS - 1 {
            q.add(&origin("10.0.0.1", &format!("bad{i}")), t0);
        }
        // A colleague on the same host, and the same name elsewhere, still join.
        assert_eq!(q.refuses(&origin("10.0.0.1", "honest"), t0), None);
        assert_eq!(q.refuses(&origin("10.0.0.2", "bad0"), t0), None);
        q.add(&origin("10.0.0.1", "bad-last"), t0);
        assert_eq!(
            q.refuses(&origin("10.0.0.1", "fresh-name"), t0),
            Some(MINUTE)
        );
        assert_eq!(q.refuses(&origin("10.0.0.2", "fresh-name"), t0), None);
    }

    #[test]
    fn revoked_claims_are_struck_for_a_while_without_refusing_the_worker() {
        let mut q = Quarantine::new(MINUTE);
        let t0 = Instant::now();
        let w = origin("10.0.0.1", "claims");
        let four = Shape::new(4, 4).expect("shape");
        q.revoke(&w, four, t0);
        assert_eq!(q.refuses(&w, t0), None);
        assert_eq!(q.revoked(&w, t0), BTreeSet::from([four]));
        assert!(q.revoked(&origin("10.0.0.1", "other"), t0).is_empty());
        assert!(q.revoked(&w, t0 + MINUTE).is_empty());
    }

    #[test]
    fn joins_are_rationed_per_address() {
        let mut q = Quarantine::new(MINUTE);
        let t0 = Instant::now();
        let a = Some("10.0.0.1".parse().expect("ip"));
        let b = Some("10.0.0.2".parse().expect("ip"));
        for _ in 0..JOIN_BURST as usize {
            assert!(q.admit_join(a, t0).is_ok());
        }
        let wait = q.admit_join(a, t0).expect_err("past the burst");
        assert!(wait <= Duration::from_millis(200), "{wait:?}");
        // Another address has its own ration; and this one refills with time.
        assert!(q.admit_join(b, t0).is_ok());
        assert!(q.admit_join(a, t0 + Duration::from_millis(200)).is_ok());
        assert!(q.admit_join(a, t0 + Duration::from_millis(200)).is_err());
        // Unknown addresses are not rationed.
        assert!(q.admit_join(None, t0).is_ok());
    }

    #[test]
    fn a_zero_duration_quarantines_nothing() {
        let mut q = Quarantine::new(Duration::ZERO);
        let t0 = Instant::now();
        let w = origin("10.0.0.1", "w");
        q.add(&w, t0);
        q.revoke(&w, Shape::new(4, 4).expect("shape"), t0);
        assert!(q.is_empty());
        assert_eq!(q.refuses(&w, t0), None);
    }

    #[test]
    fn a_flood_of_fresh_names_keeps_the_table_bounded() {
        let mut q = Quarantine::new(MINUTE);
        let t0 = Instant::now();
        for i in 0..MAX_ENTRIES as u32 + 500 {
            let ip = IpAddr::from((0x0a00_0000 + i).to_be_bytes());
            q.add(
                &Origin::new(Some(ip), "w"),
                t0 + Duration::from_micros(u64::from(i)),
            );
        }
        assert_eq!(q.len(), MAX_ENTRIES);
        // The newest are the ones kept.
        let newest = IpAddr::from((0x0a00_0000 + MAX_ENTRIES as u32 + 499).to_be_bytes());
        assert!(q.refuses(&Origin::new(Some(newest), "w"), t0).is_some());
    }
}
