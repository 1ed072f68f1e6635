//! The worker handshake: what a worker's hello gets it. [`handshake`] is a pure function from a
//! hello (with the peer's address, the quarantine's records and the slot cap) to [`Admitted`],
//! what the coordinator will count the worker as, or [`Refused`]. The `Join` service
//! (`service.rs`) reads the hello off the stream, calls it, reserves one of the worker places
//! ([`WorkerPlace`]) and hands the worker to the cluster; every way a join is refused is a
//! [`Refused`], which the service turns into a gRPC status.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use npuzzle_proto::{pattern_database_from_wire, v1};
use npuzzle_solver::Shape;

use crate::quarantine::{JOINS_PER_SECOND, Origin, Quarantine};
use crate::scheduler::Capabilities;

/// Pattern databases read from one hello at most: a worker holds at most one set of tables per
/// shape, and there are 16 shapes.
const MAX_PATTERN_DATABASES: usize = 16;

/// Characters of a worker's name and version kept: they are logged, so cut to a length logs
/// can carry.
const MAX_NAME: usize = 64;
const MAX_VERSION: usize = 32;

/// Characters of the first unreadable pattern database's error logged.
const MAX_ERROR: usize = 200;

/// Why a join was refused, in the words the worker reads.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum Refused {
    /// The address has used its ration of joins ([`JOINS_PER_SECOND`]): retry after `retry_after`.
    #[error(
        "too many joins from this address (at most {} a second); retry later",
        JOINS_PER_SECOND
    )]
    TooManyJoins { retry_after: Duration },
    /// The stream sent no message within `patience` of joining.
    #[error(
        "no hello within {:.1} s of joining; a worker's first message must be hello",
        .patience.as_secs_f64()
    )]
    NoHello { patience: Duration },
    /// The stream's first message was something else, or it ended before one came.
    #[error("a worker's first message must be hello")]
    NotHello,
    /// `origin` was dropped for misbehaving and is refused for another `left`.
    #[error(
        "worker {origin} was dropped for misbehaving (forged results, or failing unit after unit) and is quarantined for another {} s; check its logs",
        .left.as_secs() + 1
    )]
    Quarantined { origin: Origin, left: Duration },
    /// Every one of the `max_workers` places is taken.
    #[error("the coordinator already has its limit of {max_workers} workers connected")]
    Full { max_workers: usize },
}

/// What a hello gets a worker that is let in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Admitted {
    /// Its name and version, cut to [`MAX_NAME`] and [`MAX_VERSION`] characters.
    pub name: String,
    pub version: String,
    /// Who it is: its address and name.
    pub origin: Origin,
    /// The slots it is counted with: what it claims, at least 1 and at most the cap.
    pub slots: usize,
    /// What it may be sent: the tables it claims, less those it refused to search with lately.
    pub capabilities: Capabilities,
    /// Pattern databases in the hello that were not read (unreadable, or past
    /// [`MAX_PATTERN_DATABASES`]), and the first unreadable one's error: not fatal, the worker
    /// serves everything else.
    pub ignored: usize,
    pub first_error: Option<String>,
}

/// What `hello`, from `address`, gets its worker at `now`: refused while `quarantine` refuses
/// its origin, else its slots capped at `max_slots_per_worker` and its claims of tables, less
/// the shapes `quarantine` struck from them. The worker limit is not checked here: a place is
/// reserved atomically with [`WorkerPlace::reserve`].
pub(crate) fn handshake(
    hello: &v1::Hello,
    address: Option<IpAddr>,
    max_slots_per_worker: usize,
    quarantine: &Quarantine,
    now: Instant,
) -> Result<Admitted, Refused> {
    let name: String = hello.worker_id.chars().take(MAX_NAME).collect();
    let version: String = hello.version.chars().take(MAX_VERSION).collect();
    let origin = Origin::new(address, &name);
    if let Some(left) = quarantine.refuses(&origin, now) {
        return Err(Refused::Quarantined { origin, left });
    }
    let revoked = quarantine.revoked(&origin, now);
    let (mut capabilities, ignored, first_error) = claims(&hello.pattern_databases, &revoked);
    capabilities.prefetch = hello.prefetch;
    Ok(Admitted {
        name,
        version,
        slots: (hello.slots as usize).clamp(1, max_slots_per_worker.max(1)),
        origin,
        capabilities,
        ignored,
        first_error,
    })
}

/// The shapes `claimed` names tables for, less the `revoked` ones; with the count of claims not
/// read and the first one's error.
fn claims(
    claimed: &[v1::PatternDatabase],
    revoked: &BTreeSet<Shape>,
) -> (Capabilities, usize, Option<String>) {
    let mut capabilities = Capabilities::default();
    let mut ignored = claimed.len().saturating_sub(MAX_PATTERN_DATABASES);
    let mut first_error = None;
    for db in claimed.iter().take(MAX_PATTERN_DATABASES) {
        match pattern_database_from_wire(db) {
            Ok(partition) => {
                capabilities.pdb_shapes.insert(partition.shape);
            }
            Err(e) => {
                ignored += 1;
                first_error.get_or_insert_with(|| e.to_string().chars().take(MAX_ERROR).collect());
            }
        }
    }
    // Tables it claimed and then refused to search with, not long ago.
    capabilities.pdb_shapes.retain(|s| !revoked.contains(s));
    (capabilities, ignored, first_error)
}

/// One of the [`crate::Config::max_workers`] places, held while a worker's stream is open.
pub(crate) struct WorkerPlace(Arc<AtomicUsize>);

impl WorkerPlace {
    /// A place among the `max_workers` that `taken` counts, or `Full`.
    pub(crate) fn reserve(taken: &Arc<AtomicUsize>, max_workers: usize) -> Result<Self, Refused> {
        // Counted first and given back if over: two joins at once cannot both take the last.
        let place = WorkerPlace(Arc::clone(taken));
        if taken.fetch_add(1, Ordering::AcqRel) >= max_workers {
            return Err(Refused::Full { max_workers });
        }
        Ok(place)
    }
}

impl Drop for WorkerPlace {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(name: &str, slots: u32, tables: &[(u32, u32, &str)]) -> v1::Hello {
        v1::Hello {
            worker_id: name.into(),
            slots,
            version: "1.0".into(),
            pattern_databases: tables
                .iter()
                .map(|&(width, height, partition)| v1::PatternDatabase {
                    width,
                    height,
                    partition: partition.into(),
                })
                .collect(),
            ..Default::default()
        }
    }

    fn address() -> Option<IpAddr> {
        Some("10.0.0.7".parse().unwrap())
    }

    fn quarantine() -> Quarantine {
        Quarantine::new(Duration::from_secs(60))
    }

    /// What `hello` gets from a coordinator that quarantined no one, with a cap of 8 slots.
    fn admit(hello: &v1::Hello) -> Admitted {
        handshake(hello, address(), 8, &quarantine(), Instant::now()).unwrap()
    }

    #[test]
    fn slots_are_at_least_one_and_at_most_the_cap() {
        let (q, now) = (quarantine(), Instant::now());
        for (claimed, counted) in [(0, 1), (3, 3), (10_000, 8)] {
            let admitted = handshake(&hello("w", claimed, &[]), address(), 8, &q, now).unwrap();
            assert_eq!(admitted.slots, counted, "claimed {claimed}");
        }
        // A cap of 0 still lets a worker search with one slot.
        let admitted = handshake(&hello("w", 4, &[]), address(), 0, &q, now).unwrap();
        assert_eq!(admitted.slots, 1);
    }

    #[test]
    fn names_and_versions_are_cut_to_what_logs_can_carry() {
        let long = hello(&"n".repeat(1000), 1, &[]);
        let long = v1::Hello {
            version: "v".repeat(1000),
            ..long
        };
        let admitted = admit(&long);
        assert_eq!(admitted.name.chars().count(), MAX_NAME);
        assert_eq!(admitted.version.chars().count(), MAX_VERSION);
        assert_eq!(admitted.origin, Origin::new(address(), &admitted.name));
    }

    #[test]
    fn unreadable_tables_are_ignored_and_the_rest_are_served() {
        let shape = Shape::new(4, 4).unwrap();
        let claims = [(4, 4, "6-6-3"), (9, 9, "6-6-3"), (3, 3, "no-such")];
        let admitted = admit(&hello("w", 2, &claims));
        assert_eq!(admitted.capabilities.pdb_shapes, BTreeSet::from([shape]));
        assert_eq!(admitted.ignored, 2);
        assert!(admitted.first_error.is_some());
        // Past one a shape, claims are not even read.
        let many = vec![(4, 4, "6-6-3"); MAX_PATTERN_DATABASES + 5];
        let admitted = admit(&hello("w", 2, &many));
        assert_eq!((admitted.ignored, admitted.first_error), (5, None));
    }

    #[test]
    fn a_quarantined_worker_is_refused_and_a_revoked_claim_struck() {
        let (mut q, now) = (quarantine(), Instant::now());
        let bad = Origin::new(address(), "bad");
        q.add(&bad, now);
        let refused = handshake(&hello("bad", 2, &[]), address(), 8, &q, now).unwrap_err();
        assert!(matches!(&refused, Refused::Quarantined { origin, .. } if *origin == bad));
        assert!(
            refused.to_string().contains("is quarantined for another"),
            "{refused}"
        );
        // The same name from another address is someone else.
        assert!(handshake(&hello("bad", 2, &[]), None, 8, &q, now).is_ok());
        let liar = Origin::new(address(), "liar");
        let shape = Shape::new(4, 4).unwrap();
        q.revoke(&liar, shape, now);
        let admitted = handshake(&hello("liar", 2, &[(4, 4, "6-6-3")]), address(), 8, &q, now);
        assert!(admitted.unwrap().capabilities.pdb_shapes.is_empty());
    }

    #[test]
    fn worker_places_are_given_back_when_dropped_or_refused() {
        let taken = Arc::new(AtomicUsize::new(0));
        let first = WorkerPlace::reserve(&taken, 1).unwrap();
        assert_eq!(
            WorkerPlace::reserve(&taken, 1).err(),
            Some(Refused::Full { max_workers: 1 })
        );
        assert_eq!(taken.load(Ordering::Acquire), 1);
        drop(first);
        assert!(WorkerPlace::reserve(&taken, 1).is_ok());
        assert_eq!(taken.load(Ordering::Acquire), 0);
    }
}
