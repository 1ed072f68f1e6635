//! Who is waiting for which search, and who may start one: the coordinator's request
//! bookkeeping, with no I/O. The gRPC service is a thin adapter over it; the unit tests below
//! drive it directly, from many threads at once.
//!
//! - [`Flights`]: identical requests (same board, goal, heuristic and factor) share one search, a
//!   *flight*. Joining, leaving and ending are each one step under one lock: when the last
//!   waiter leaves, the flight leaves the table in the same step, so a request that comes a
//!   moment later starts a new search instead of joining one that is being cancelled.
//! - [`Admissions`]: the limits on searches waiting or running, in all and per client. An
//!   [`Admission`] holds a place under both until it is dropped.
//!
//! ```
//! use npuzzle_coordinator::flights::{Flights, Left};
//! use npuzzle_coordinator::scheduler::JobId;
//! use npuzzle_solver::{Board, BoardKey, Goal, HeuristicKind, Weight};
//!
//! let board = Board::parse("1 2 3 4 5 6 0 7 8", None).unwrap();
//! let goal = Goal::blank_last(board.shape());
//! let key = (BoardKey::new(&board, &goal).unwrap(), HeuristicKind::Manhattan, Weight::OPTIMAL);
//! let flights: Flights<&str> = Flights::default();
//! let first = flights.join(key, || (JobId(1), "search #1"));
//! let second = flights.join(key, || (JobId(2), "search #2"));
//! assert!(first.started && !second.started && second.id == JobId(1));
//! assert_eq!(flights.leave(key, JobId(1)), Left::Others);
//! assert_eq!(flights.leave(key, JobId(1)), Left::Last); // cancel search #1
//! assert!(flights.join(key, || (JobId(3), "search #3")).started);
//! ```

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use npuzzle_solver::{BoardKey, HeuristicKind, Weight};

use crate::scheduler::JobId;

/// What identical requests share: the puzzle (board and goal), the heuristic searched with, and
/// the factor of optimal its answer may be (a bounded-suboptimal search is another search).
pub type FlightKey = (BoardKey, HeuristicKind, Weight);

/// The searches running now, by [`FlightKey`], each with its count of waiters.
pub struct Flights<T> {
    table: Mutex<HashMap<FlightKey, Entry<T>>>,
}

struct Entry<T> {
    flight: Arc<T>,
    id: JobId,
    waiters: usize,
}

/// A place among a flight's waiters; give it back with [`Flights::leave`].
#[derive(Debug)]
pub struct Joined<T> {
    pub flight: Arc<T>,
    pub id: JobId,
    /// This request started the flight: the caller must set it going.
    pub started: bool,
}

/// What [`Flights::leave`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Left {
    /// That was the last waiter: the flight is out of the table and no one can join it any
    /// more; the caller cancels it.
    Last,
    /// Others still wait, or the flight had already ended.
    Others,
}

impl<T> Default for Flights<T> {
    fn default() -> Self {
        Flights {
            table: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> Flights<T> {
    /// A panic elsewhere while the lock was held leaves a table that is still consistent
    /// (every step is a single map operation), so a poisoned lock is used as it is.
    fn table(&self) -> MutexGuard<'_, HashMap<FlightKey, Entry<T>>> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Joins the flight for `key`, or starts one with `start` (its job id and state) when none
    /// is running.
    pub fn join(&self, key: FlightKey, start: impl FnOnce() -> (JobId, T)) -> Joined<T> {
        let mut table = self.table();
        if let Some(entry) = table.get_mut(&key) {
            entry.waiters += 1;
            return Joined {
                flight: Arc::clone(&entry.flight),
                id: entry.id,
                started: false,
            };
        }
        let (id, flight) = start();
        let flight = Arc::new(flight);
        table.insert(
            key,
            Entry {
                flight: Arc::clone(&flight),
                id,
                waiters: 1,
            },
        );
        Joined {
            flight,
            id,
            started: true,
        }
    }

    /// One waiter of flight `id` leaves.
    pub fn leave(&self, key: FlightKey, id: JobId) -> Left {
        let mut table = self.table();
        let Some(entry) = table.get_mut(&key).filter(|e| e.id == id) else {
            // Ended already (a new flight for the same key may be running: not ours).
            return Left::Others;
        };
        entry.waiters = entry.waiters.saturating_sub(1);
        if entry.waiters > 0 {
            return Left::Others;
        }
        table.remove(&key);
        Left::Last
    }

    /// Flight `id` has ended: out of the table before its end is published, so that a request
    /// that comes after the end starts anew (or finds the answer in the cache).
    pub fn end(&self, key: FlightKey, id: JobId) {
        let mut table = self.table();
        if table.get(&key).is_some_and(|e| e.id == id) {
            table.remove(&key);
        }
    }

    /// The flights running now, each with its count of waiters (in no order).
    pub fn snapshot(&self) -> Vec<(Arc<T>, usize)> {
        self.table()
            .values()
            .map(|e| (Arc::clone(&e.flight), e.waiters))
            .collect()
    }

    /// Flights running now.
    pub fn len(&self) -> usize {
        self.table().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a search was not admitted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the coordinator is at its limit of {limit} searches waiting or running; retry later")]
    Coordinator { limit: usize },
    #[error(
        "client {client} already has {limit} searches waiting or running (the per-client limit); retry later"
    )]
    Client { client: IpAddr, limit: usize },
}

/// The limits on searches waiting or running: `limit` in all, and `per_client` for each client
/// address (0: no per-client limit).
pub struct Admissions {
    limit: usize,
    per_client: usize,
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    total: usize,
    /// Only clients with searches in flight: entries at zero are removed.
    by_client: HashMap<IpAddr, usize>,
}

/// A place under the limits, given back on drop.
pub struct Admission {
    admissions: Arc<Admissions>,
    client: Option<IpAddr>,
}

impl Admissions {
    pub fn new(limit: usize, per_client: usize) -> Arc<Admissions> {
        Arc::new(Admissions {
            limit,
            per_client,
            counts: Mutex::new(Counts::default()),
        })
    }

    fn counts(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for one more search from `client` (`None`: an address unknown, counted in all
    /// only).
    pub fn admit(self: &Arc<Self>, client: Option<IpAddr>) -> Result<Admission, Refusal> {
        let mut counts = self.counts();
        let client = client.filter(|_| self.per_client > 0);
        if let Some(ip) = client
            && counts.by_client.get(&ip).copied().unwrap_or(0) >= self.per_client
        {
            return Err(Refusal::Client {
                client: ip,
                limit: self.per_client,
            });
        }
        if counts.total >= self.limit {
            return Err(Refusal::Coordinator { limit: self.limit });
        }
        counts.total += 1;
        if let Some(ip) = client {
            *counts.by_client.entry(ip).or_insert(0) += 1;
        }
        Ok(Admission {
            admissions: Arc::clone(self),
            client,
        })
    }

    /// Searches admitted and not yet given back.
    pub fn admitted(&self) -> usize {
        self.counts().total
    }

    /// Clients with at least one search admitted.
    pub fn clients(&self) -> usize {
        self.counts().by_client.len()
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut counts = self.admissions.counts();
        counts.total = counts.total.saturating_sub(1);
        if let Some(ip) = self.client
            && let Some(n) = counts.by_client.get_mut(&ip)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.by_client.remove(&ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npuzzle_solver::{Board, Goal};
    use std::sync::atomic::{AtomicU64, Ordering};

    fn key(tiles: &str, heuristic: HeuristicKind) -> FlightKey {
        let board = Board::parse(tiles, None).expect("board");
        let goal = Goal::blank_last(board.shape());
        (
            BoardKey::new(&board, &goal).expect("key"),
            heuristic,
            Weight::OPTIMAL,
        )
    }

    const BOARD: &str = "1 2 3 4 5 6 0 7 8";

    #[test]
    fn identical_requests_share_one_flight_until_the_last_leaves() {
        let flights: Flights<()> = Flights::default();
        let k = key(BOARD, HeuristicKind::Manhattan);
        let a = flights.join(k, || (JobId(7), ()));
        let b = flights.join(k, || panic!("a second flight for the same key"));
        assert!(a.started && !b.started);
        assert_eq!((a.id, b.id), (JobId(7), JobId(7)));
        assert_eq!(flights.leave(k, JobId(7)), Left::Others);
        assert_eq!(flights.len(), 1);
        assert_eq!(flights.leave(k, JobId(7)), Left::Last);
        assert!(flights.is_empty());
        // The next request starts anew rather than joining the cancelled flight.
        let c = flights.join(k, || (JobId(8), ()));
        assert!(c.started);
        assert_eq!(c.id, JobId(8));
    }

    #[test]
    fn another_heuristic_is_another_flight() {
        let flights: Flights<()> = Flights::default();
        let a = flights.join(key(BOARD, HeuristicKind::Manhattan), || (JobId(1), ()));
        let b = flights.join(key(BOARD, HeuristicKind::Pdb), || (JobId(2), ()));
        assert!(a.started && b.started);
        assert_eq!(flights.len(), 2);
    }

    #[test]
    fn leaving_an_ended_flight_cancels_nothing_and_spares_its_successor() {
        let flights: Flights<()> = Flights::default();
        let k = key(BOARD, HeuristicKind::Manhattan);
        flights.join(k, || (JobId(1), ()));
        flights.end(k, JobId(1));
        assert!(flights.is_empty());
        let next = flights.join(k, || (JobId(2), ()));
        assert!(next.started);
        // The old flight's waiter leaves late: flight 2 keeps its only waiter.
        assert_eq!(flights.leave(k, JobId(1)), Left::Others);
        assert_eq!(flights.len(), 1);
        // Ending flight 1 again (a late driver) does not remove flight 2 either.
        flights.end(k, JobId(1));
        assert_eq!(flights.len(), 1);
        assert_eq!(flights.leave(k, JobId(2)), Left::Last);
    }

    /// The race of issue 11: a request arriving just as the last waiter leaves must never join
    /// the flight being cancelled. Threads join and leave at random; every join must land on a
    /// flight that no `Left::Last` has been given for.
    #[test]
    fn no_one_joins_a_flight_whose_last_waiter_has_left() {
        let flights: Arc<Flights<Mutex<bool>>> = Arc::new(Flights::default());
        let next_id = Arc::new(AtomicU64::new(1));
        let k = key(BOARD, HeuristicKind::Manhattan);
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let flights = Arc::clone(&flights);
                let next_id = Arc::clone(&next_id);
                std::thread::spawn(move || {
                    let mut joined_cancelled = 0;
                    for _ in 0..20_000 {
                        let joined = flights.join(k, || {
                            (
                                JobId(next_id.fetch_add(1, Ordering::Relaxed)),
                                Mutex::new(false),
                            )
                        });
                        if *joined.flight.lock().expect("lock") {
                            joined_cancelled += 1;
                        }
                        std::thread::yield_now();
                        if flights.leave(k, joined.id) == Left::Last {
                            *joined.flight.lock().expect("lock") = true;
                        }
                    }
                    joined_cancelled
                })
            })
            .collect();
        let cancelled_joins: usize = threads.into_iter().map(|t| t.join().expect("thread")).sum();
        assert_eq!(cancelled_joins, 0);
        assert!(flights.is_empty());
        assert!(next_id.load(Ordering::Relaxed) > 1);
    }

    #[test]
    fn admissions_hold_both_limits_and_give_places_back_on_drop() {
        let admissions = Admissions::new(3, 2);
        let a: IpAddr = "10.0.0.1".parse().expect("ip");
        let b: IpAddr = "10.0.0.2".parse().expect("ip");
        let first = admissions.admit(Some(a)).expect("first");
        let _second = admissions.admit(Some(a)).expect("second");
        assert_eq!(
            admissions.admit(Some(a)).err(),
            Some(Refusal::Client {
                client: a,
                limit: 2
            })
        );
        let _third = admissions.admit(Some(b)).expect("another client");
        assert_eq!(
            admissions.admit(None).err(),
            Some(Refusal::Coordinator { limit: 3 })
        );
        assert_eq!((admissions.admitted(), admissions.clients()), (3, 2));
        drop(first);
        assert_eq!(admissions.admitted(), 2);
        let again = admissions.admit(Some(a)).expect("a place given back");
        drop(again);
        drop(_second);
        assert_eq!(admissions.clients(), 1);
    }

    #[test]
    fn a_per_client_limit_of_zero_counts_only_the_total() {
        let admissions = Admissions::new(2, 0);
        let a: IpAddr = "10.0.0.1".parse().expect("ip");
        let _x = admissions.admit(Some(a)).expect("x");
        let _y = admissions.admit(Some(a)).expect("y");
        assert!(matches!(
            admissions.admit(Some(a)),
            Err(Refusal::Coordinator { limit: 2 })
        ));
        assert_eq!(admissions.clients(), 0);
    }
}
