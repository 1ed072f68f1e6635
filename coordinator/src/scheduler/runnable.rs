//! Which job a free slot serves next: the client holding the fewest running tasks first (so a
//! client's share of the slots does not grow with its number of jobs), then that client's job
//! with the fewest running tasks (the lowest id on ties). A part that owns its indexes: a job
//! enters, moves and leaves through [`Runnable::update`], which the scheduler calls after each
//! change of the job's running tasks or queue, and [`Runnable::remove`] when it ends.
//!
//! With one client (every job from one address, or a simulation) the order is the jobs' own:
//! the fewest running tasks first.

use std::collections::BTreeSet;

use foldhash::{HashMap, HashMapExt};

use super::messages::{ClientId, JobId};

/// What the index holds of one job (kept in the job): the running tasks it counted for the
/// job's client, and the job's key among the client's runnable jobs, while it has queued tasks.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Entry {
    counted: usize,
    key: Option<(usize, JobId)>,
}

/// One client's part: its running tasks over all its jobs, and its jobs with queued tasks.
#[derive(Debug, Default)]
struct Book {
    running: usize,
    /// Jobs held by this book (running tasks or queued ones).
    jobs: usize,
    runnable: BTreeSet<(usize, JobId)>,
}

/// The runnable jobs, by client.
#[derive(Debug)]
pub(super) struct Runnable {
    /// Clients with runnable jobs, sorted by (running tasks, id): a vector, since clients are
    /// few and each event moves one (a move shifts a few entries; a B-tree would allocate and
    /// free a node on most).
    clients: Vec<(usize, ClientId)>,
    books: HashMap<ClientId, Book>,
    /// Runnable jobs with no task running: whether any job is starving, without a look.
    starving: usize,
}

impl Default for Runnable {
    fn default() -> Runnable {
        Runnable {
            clients: Vec::new(),
            books: HashMap::new(),
            starving: 0,
        }
    }
}

impl Runnable {
    /// Job `id` of `client` has `running` tasks out, and queued ones if `queued`; `entry` is
    /// what the index counted of it before.
    pub(super) fn update(
        &mut self,
        client: ClientId,
        id: JobId,
        entry: &mut Entry,
        running: usize,
        queued: bool,
    ) {
        let held_before = entry.counted > 0 || entry.key.is_some();
        let held_after = running > 0 || queued;
        if !held_before && !held_after {
            return;
        }
        let book = self.books.entry(client).or_default();
        let was_runnable = !book.runnable.is_empty();
        let before = (book.running, client);
        book.running = book.running - entry.counted + running;
        entry.counted = running;
        if let Some(key) = entry.key.take() {
            book.runnable.remove(&key);
            self.starving -= usize::from(key.0 == 0);
        }
        if queued {
            let key = (running, id);
            book.runnable.insert(key);
            entry.key = Some(key);
            self.starving += usize::from(running == 0);
        }
        book.jobs = book.jobs + usize::from(held_after) - usize::from(held_before);
        let (runnable, after, empty) = (
            !book.runnable.is_empty(),
            (book.running, client),
            book.jobs == 0,
        );
        if was_runnable && runnable && self.clients.len() == 1 {
            // The only runnable client (one user, or a simulation): its key, in place.
            self.clients[0] = after;
        } else {
            if was_runnable
                && (!runnable || before != after)
                && let Ok(i) = self.clients.binary_search(&before)
            {
                self.clients.remove(i);
            }
            if runnable && (!was_runnable || before != after) {
                let i = self.clients.binary_search(&after).unwrap_or_else(|i| i);
                self.clients.insert(i, after);
            }
        }
        if empty {
            self.books.remove(&client);
        }
    }

    /// Job `id` of `client` is over.
    pub(super) fn remove(&mut self, client: ClientId, id: JobId, entry: &mut Entry) {
        self.update(client, id, entry, 0, false);
    }

    /// Whether no job has queued tasks.
    pub(super) fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// The runnable jobs in the order slots serve them.
    pub(super) fn jobs(&self) -> impl Iterator<Item = JobId> + '_ {
        self.clients.iter().flat_map(|(_, client)| {
            self.books
                .get(client)
                .into_iter()
                .flat_map(|b| b.runnable.iter().map(|&(_, id)| id))
        })
    }

    /// Whether some runnable job has no task running.
    pub(super) fn has_starving(&self) -> bool {
        self.starving > 0
    }

    /// Runnable jobs with no task running (starving), in the order slots serve them.
    pub(super) fn starving(&self) -> impl Iterator<Item = JobId> + '_ {
        self.clients.iter().flat_map(|(_, client)| {
            self.books.get(client).into_iter().flat_map(|b| {
                b.runnable
                    .iter()
                    .take_while(|&&(running, _)| running == 0)
                    .map(|&(_, id)| id)
            })
        })
    }

    /// Clients with running or queued tasks.
    pub(super) fn clients(&self) -> usize {
        self.books.len()
    }

    /// The running tasks of `client`'s jobs, and how many of its jobs run or wait.
    pub(super) fn of(&self, client: ClientId) -> (usize, usize) {
        self.books
            .get(&client)
            .map_or((0, 0), |b| (b.running, b.jobs))
    }

    /// Each client's running tasks.
    pub(super) fn running(&self) -> impl Iterator<Item = (ClientId, usize)> + '_ {
        self.books.iter().map(|(&c, b)| (c, b.running))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_with_many_jobs_is_served_after_one_holding_fewer_tasks() {
        let mut r = Runnable::default();
        let (a, b) = (ClientId(1), ClientId(2));
        let mut entries = [Entry::default(); 6];
        // Client A: four jobs, one task running each, all with more queued.
        for j in 0..4 {
            r.update(a, JobId(j), &mut entries[j as usize], 1, true);
        }
        // Client B: one job, one task running, more queued.
        r.update(b, JobId(4), &mut entries[4], 1, true);
        assert_eq!(r.jobs().next(), Some(JobId(4)), "B holds 1 task, A 4");
        assert_eq!(r.of(a), (4, 4));
        assert_eq!(r.clients(), 2);
        // B's job gets three more: now A's first job comes first.
        r.update(b, JobId(4), &mut entries[4], 4, true);
        assert_eq!(r.jobs().next(), Some(JobId(0)));
        assert_eq!(r.starving().count(), 0);
        // A new job of A's, nothing running: starving, but A holds 4 of 8.
        r.update(a, JobId(5), &mut entries[5], 0, true);
        assert!(r.has_starving());
        assert_eq!(r.starving().collect::<Vec<_>>(), vec![JobId(5)]);
        // Jobs end: the books empty out.
        for j in 0..6 {
            let client = if j == 4 { b } else { a };
            r.remove(client, JobId(j), &mut entries[j as usize]);
        }
        assert!(r.is_empty() && !r.has_starving());
        assert_eq!(r.clients(), 0);
        assert_eq!(r.running().count(), 0);
    }

    #[test]
    fn a_job_with_tasks_running_and_none_queued_still_counts_for_its_client() {
        let mut r = Runnable::default();
        let mut long = Entry::default();
        let mut short = Entry::default();
        r.update(ClientId(1), JobId(1), &mut long, 2, false);
        assert!(r.is_empty(), "nothing queued");
        assert_eq!(r.of(ClientId(1)), (2, 1));
        r.update(ClientId(1), JobId(2), &mut short, 0, true);
        assert_eq!(r.of(ClientId(1)), (2, 2));
        assert_eq!(r.starving().collect::<Vec<_>>(), vec![JobId(2)]);
        r.update(ClientId(1), JobId(1), &mut long, 1, false);
        assert_eq!(r.of(ClientId(1)), (1, 2));
    }
}
