//! The answer store: the cache's durable copy in `--cache-dir`, so that answers survive a
//! restart.
//!
//! One [redb](https://docs.rs/redb) file, [`FILE_NAME`], with three tables:
//!
//! - `meta`: `format_version` → [`FORMAT_VERSION`]. Another version (or none, in a file that
//!   has tables) is treated as a corrupt store.
//! - `answers`: an answer's key ([`encode_key`]: the board and the goal, byte by byte) → its
//!   sequence number (8 bytes, little-endian) and its path (move letters, `UDLR`).
//! - `order`: sequence number → key, oldest first: the pruning order.
//! - `jobs`: a detached job's id → its request record, and `checkpoints`: a job's id → its
//!   latest checkpoint record (both encoded and checked by `jobs/durable.rs`; the store keeps their
//!   bytes). A job's entries are deleted when it ends. Tables added to format 1: an older
//!   coordinator ignores them.
//!
//! What is stored is what the cache is given: one answer per solved request, not the suffixes
//! (the cache derives those again when it is loaded). The store keeps at most `capacity`
//! answers; each write prunes the oldest past that.
//!
//! Nothing read back is trusted: [`Store::open`] replays every answer's path from its board and
//! drops (and deletes) those that do not reach their goal or do not decode. A file that does not
//! open as a store of this format is renamed aside (`answers.redb.corrupt-<unix ms>`) and a new,
//! empty one is created. Replay proves that a path reaches its goal, not that it is the shortest:
//! the store is trusted for optimality only as far as its directory's permissions are.
//!
//! [`Writer`] is the store's only user while the coordinator serves: a thread that takes
//! answers from a bounded channel and writes each batch in one transaction (one fsync), so no
//! request waits on the disk. When the channel is full the answer is not persisted (it is still
//! cached in memory) and counted.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use npuzzle_solver::{Board, Goal, Move, Shape, moves_to_string, parse_moves};
use redb::{Database, ReadableTable, ReadableTableMetadata, TableDefinition};

/// The store's file in the cache directory.
pub const FILE_NAME: &str = "answers.redb";
/// The layout this coordinator reads and writes (the tables and encodings above).
pub const FORMAT_VERSION: u64 = 1;
/// Answers waiting for the writer at most; past it they are not persisted.
pub const QUEUE: usize = 4096;
/// Answers written in one transaction at most.
const BATCH: usize = 1024;

const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const ANSWERS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("answers");
const ORDER: TableDefinition<u64, &[u8]> = TableDefinition::new("order");
const JOBS: TableDefinition<&str, &[u8]> = TableDefinition::new("jobs");
const CHECKPOINTS: TableDefinition<&str, &[u8]> = TableDefinition::new("checkpoints");
const VERSION_KEY: &str = "format_version";

/// Why the store cannot be used. A corrupt file is not one of these: it is set aside.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the cache directory {}: {source}", dir.display())]
    CreateDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is already open (another coordinator with the same --cache-dir?)", file.display())]
    InUse { file: PathBuf },
    #[error("cannot rename the corrupt store {} aside: {source}", file.display())]
    SetAside {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot use the store {}: {source}", file.display())]
    Redb {
        file: PathBuf,
        source: Box<redb::Error>,
    },
}

/// Why a file is not a usable store (it is then set aside).
#[derive(Debug, thiserror::Error)]
enum Unusable {
    #[error(transparent)]
    Redb(Box<redb::Error>),
    #[error("format version {found:?}, expected {FORMAT_VERSION}")]
    Version { found: Option<u64> },
}

fn redb_err(e: impl Into<redb::Error>) -> Unusable {
    Unusable::Redb(Box::new(e.into()))
}

/// A stored key that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an answer key: {0}")]
pub struct BadKey(&'static str);

/// Encodes a (board, goal) pair: width, height, the board's tiles, the goal's tiles, one byte
/// each. Explicit, so that it reads the same in every process and version of the solver.
pub fn encode_key(board: &Board, goal: &Goal) -> Vec<u8> {
    let shape = board.shape();
    let mut key = Vec::with_capacity(2 + 2 * shape.cells());
    key.push(shape.width() as u8);
    key.push(shape.height() as u8);
    key.extend_from_slice(board.tiles());
    key.extend_from_slice(goal.tiles());
    key
}

/// The inverse of [`encode_key`], checking everything (shape, permutations, length).
pub fn decode_key(key: &[u8]) -> Result<(Board, Goal), BadKey> {
    let [width, height, rest @ ..] = key else {
        return Err(BadKey("shorter than its shape"));
    };
    let shape =
        Shape::new(*width as usize, *height as usize).map_err(|_| BadKey("invalid shape"))?;
    let n = shape.cells();
    if rest.len() != 2 * n {
        return Err(BadKey("wrong length for its shape"));
    }
    let board = Board::new(shape, &rest[..n]).map_err(|_| BadKey("invalid board"))?;
    let goal = Board::new(shape, &rest[n..]).map_err(|_| BadKey("invalid goal"))?;
    Ok((board, Goal::from_board(goal)))
}

fn encode_value(seq: u64, path: &[Move]) -> Vec<u8> {
    let mut value = seq.to_le_bytes().to_vec();
    value.extend_from_slice(moves_to_string(path).as_bytes());
    value
}

fn decode_value(value: &[u8]) -> Option<(u64, Vec<Move>)> {
    let (seq, letters) = value.split_first_chunk::<8>()?;
    let path = parse_moves(std::str::from_utf8(letters).ok()?).ok()?;
    Some((u64::from_le_bytes(*seq), path))
}

/// One stored answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredAnswer {
    pub board: Board,
    pub goal: Goal,
    pub path: Vec<Move>,
}

impl StoredAnswer {
    /// Whether the path replays from the board to the goal.
    pub fn replays(&self) -> bool {
        self.board
            .verify(&self.path, &self.goal)
            .is_ok_and(|v| v.reaches_goal)
    }
}

/// A detached job as the store keeps it: its id, its request record and its latest checkpoint
/// record, as bytes (`jobs/durable.rs` decodes and checks them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredJob {
    pub id: String,
    pub request: Vec<u8>,
    pub checkpoint: Option<Vec<u8>>,
}

/// An opened store and what [`Store::open`] found in it.
pub struct Opened {
    pub store: Store,
    /// The newest answers that fill the cache (their paths' states add up to about
    /// `capacity`), oldest first, each replayed.
    pub answers: Vec<StoredAnswer>,
    /// Answers in the store, all replayed (including those not in `answers`).
    pub valid: usize,
    /// Entries dropped and deleted: they did not decode or did not replay.
    pub dropped: usize,
    /// Where a corrupt file was moved, if one was.
    pub set_aside: Option<(PathBuf, String)>,
    /// Detached jobs that had not ended, by id.
    pub jobs: Vec<StoredJob>,
}

/// The store file, open. See the module documentation.
pub struct Store {
    db: Database,
    file: PathBuf,
    capacity: u64,
    next_seq: u64,
}

impl Store {
    /// Opens (or creates) the store in `dir` and reads it back: see the module documentation.
    /// A corrupt file is set aside and replaced by an empty store; only a directory that cannot
    /// be created, a file already open elsewhere, or a failure to set one aside are errors.
    pub fn open(dir: &Path, capacity: usize) -> Result<Opened, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
            dir: dir.to_path_buf(),
            source,
        })?;
        let file = dir.join(FILE_NAME);
        let capacity = capacity as u64;
        match Store::read(&file, capacity) {
            Ok(opened) => Ok(opened),
            Err(Unusable::Redb(e)) if matches!(*e, redb::Error::DatabaseAlreadyOpen) => {
                Err(StoreError::InUse { file })
            }
            Err(problem) => {
                let aside = set_aside(&file)?;
                let reason = problem.to_string();
                // A new file: it cannot have another version.
                let mut opened = Store::read(&file, capacity).map_err(|e| StoreError::Redb {
                    file: file.clone(),
                    source: match e {
                        Unusable::Redb(e) => e,
                        version => Box::new(redb::Error::Corrupted(version.to_string())),
                    },
                })?;
                opened.set_aside = Some((aside, reason));
                Ok(opened)
            }
        }
    }

    /// Opens `file`, checks its version, replays every answer, deletes the bad ones and prunes
    /// past `capacity`.
    fn read(file: &Path, capacity: u64) -> Result<Opened, Unusable> {
        let db = Database::create(file).map_err(redb_err)?;
        let txn = db.begin_read().map_err(redb_err)?;
        let fresh = txn.list_tables().map_err(redb_err)?.next().is_none();
        let mut valid = Vec::new(); // (seq, key) newest first
        let mut bad_keys: HashSet<Vec<u8>> = HashSet::new();
        let mut bad_seqs = Vec::new();
        let mut answers = Vec::new();
        let mut orphans = 0;
        if !fresh {
            let found = match txn.open_table(META) {
                Ok(meta) => meta.get(VERSION_KEY).map_err(redb_err)?.map(|v| v.value()),
                Err(redb::TableError::TableDoesNotExist(_)) => None,
                Err(e) => return Err(redb_err(e)),
            };
            if found != Some(FORMAT_VERSION) {
                return Err(Unusable::Version { found });
            }
            let stored = txn.open_table(ANSWERS).map_err(redb_err)?;
            let order = txn.open_table(ORDER).map_err(redb_err)?;
            let mut budget = capacity;
            for entry in order.iter().map_err(redb_err)?.rev() {
                let (seq, key) = entry.map_err(redb_err)?;
                let (seq, key) = (seq.value(), key.value().to_vec());
                let value = stored.get(key.as_slice()).map_err(redb_err)?;
                let answer = value.and_then(|v| {
                    let (stored_seq, path) = decode_value(v.value())?;
                    let (board, goal) = decode_key(&key).ok()?;
                    let answer = StoredAnswer { board, goal, path };
                    (stored_seq == seq && answer.replays()).then_some(answer)
                });
                match answer {
                    Some(answer) => {
                        let states = answer.path.len() as u64 + 1;
                        if budget > 0 {
                            budget = budget.saturating_sub(states);
                            answers.push(answer);
                        }
                        valid.push((seq, key));
                    }
                    None => {
                        bad_seqs.push(seq);
                        bad_keys.insert(key);
                    }
                }
            }
            // Delete a bad entry's answer only if no good entry owns it; delete answers that no
            // `order` entry points to (they would never be loaded, nor pruned).
            let referenced: HashSet<&[u8]> = valid.iter().map(|(_, k)| k.as_slice()).collect();
            bad_keys.retain(|k| !referenced.contains(k.as_slice()));
            if stored.len().map_err(redb_err)? != valid.len() as u64 {
                for entry in stored.iter().map_err(redb_err)? {
                    let (key, _) = entry.map_err(redb_err)?;
                    if !referenced.contains(key.value()) && bad_keys.insert(key.value().to_vec()) {
                        orphans += 1;
                    }
                }
            }
        }
        let jobs = if fresh { Vec::new() } else { read_jobs(&txn)? };
        drop(txn);
        answers.reverse();
        let next_seq = valid.first().map_or(0, |(seq, _)| seq + 1);
        let dropped = bad_seqs.len() + orphans;
        let excess = valid.len().saturating_sub(capacity as usize);
        let txn = db.begin_write().map_err(redb_err)?;
        {
            let mut meta = txn.open_table(META).map_err(redb_err)?;
            meta.insert(VERSION_KEY, FORMAT_VERSION).map_err(redb_err)?;
            let mut stored = txn.open_table(ANSWERS).map_err(redb_err)?;
            let mut order = txn.open_table(ORDER).map_err(redb_err)?;
            txn.open_table(JOBS).map_err(redb_err)?;
            txn.open_table(CHECKPOINTS).map_err(redb_err)?;
            for key in &bad_keys {
                stored.remove(key.as_slice()).map_err(redb_err)?;
            }
            for seq in &bad_seqs {
                order.remove(seq).map_err(redb_err)?;
            }
            for (seq, key) in valid.iter().rev().take(excess) {
                stored.remove(key.as_slice()).map_err(redb_err)?;
                order.remove(seq).map_err(redb_err)?;
            }
        }
        txn.commit().map_err(redb_err)?;
        let valid = valid.len() - excess;
        Ok(Opened {
            store: Store {
                db,
                file: file.to_path_buf(),
                capacity,
                next_seq,
            },
            answers,
            valid,
            dropped,
            set_aside: None,
            jobs,
        })
    }

    /// Writes `batch` in one transaction (a later answer for the same key replaces the earlier
    /// one) and prunes the oldest answers past the capacity.
    pub fn put(&mut self, batch: &[StoredAnswer]) -> Result<(), StoreError> {
        self.put_inner(batch).map_err(|source| StoreError::Redb {
            file: self.file.clone(),
            source: Box::new(source),
        })
    }

    // redb's error is large; it is boxed at this module's boundary.
    #[allow(clippy::result_large_err)]
    fn put_inner(&mut self, batch: &[StoredAnswer]) -> Result<(), redb::Error> {
        let txn = self.db.begin_write()?;
        {
            let mut stored = txn.open_table(ANSWERS)?;
            let mut order = txn.open_table(ORDER)?;
            for answer in batch {
                let key = encode_key(&answer.board, &answer.goal);
                let seq = self.next_seq;
                self.next_seq += 1;
                let old = stored
                    .insert(key.as_slice(), encode_value(seq, &answer.path).as_slice())?
                    .and_then(|old| decode_value(old.value()).map(|(s, _)| s));
                if let Some(old) = old {
                    order.remove(old)?;
                }
                order.insert(seq, key.as_slice())?;
            }
            while order.len()? > self.capacity {
                let Some((_, key)) = order.pop_first()? else {
                    break;
                };
                stored.remove(key.value())?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    /// Writes the changes to detached jobs' records in one transaction.
    pub fn put_jobs(&mut self, changes: &[JobChange]) -> Result<(), StoreError> {
        self.put_jobs_inner(changes)
            .map_err(|source| StoreError::Redb {
                file: self.file.clone(),
                source: Box::new(source),
            })
    }

    #[allow(clippy::result_large_err)]
    fn put_jobs_inner(&mut self, changes: &[JobChange]) -> Result<(), redb::Error> {
        let txn = self.db.begin_write()?;
        {
            let mut jobs = txn.open_table(JOBS)?;
            let mut checkpoints = txn.open_table(CHECKPOINTS)?;
            for change in changes {
                match change {
                    JobChange::Request { id, record } => {
                        jobs.insert(id.as_str(), record.as_slice())?;
                        checkpoints.remove(id.as_str())?;
                    }
                    JobChange::Checkpoint { id, record } => {
                        // Only for a job still kept: a checkpoint taken as its job ended
                        // must not outlive it.
                        if jobs.get(id.as_str())?.is_some() {
                            checkpoints.insert(id.as_str(), record.as_slice())?;
                        }
                    }
                    JobChange::Ended { id } => {
                        jobs.remove(id.as_str())?;
                        checkpoints.remove(id.as_str())?;
                    }
                }
            }
        }
        txn.commit()?;
        Ok(())
    }

    /// Answers stored now.
    pub fn len(&self) -> Result<u64, StoreError> {
        self.len_inner().map_err(|source| StoreError::Redb {
            file: self.file.clone(),
            source: Box::new(source),
        })
    }

    #[allow(clippy::result_large_err)]
    fn len_inner(&self) -> Result<u64, redb::Error> {
        let txn = self.db.begin_read()?;
        Ok(txn.open_table(ORDER)?.len()?)
    }

    pub fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.len()? == 0)
    }
}

/// Every job kept in the `jobs` table, with its checkpoint if it has one. A store of format 1
/// written before jobs were kept has neither table.
fn read_jobs(txn: &redb::ReadTransaction) -> Result<Vec<StoredJob>, Unusable> {
    let jobs = match txn.open_table(JOBS) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(redb_err(e)),
    };
    let checkpoints = match txn.open_table(CHECKPOINTS) {
        Ok(t) => Some(t),
        Err(redb::TableError::TableDoesNotExist(_)) => None,
        Err(e) => return Err(redb_err(e)),
    };
    let mut out = Vec::new();
    for entry in jobs.iter().map_err(redb_err)? {
        let (id, request) = entry.map_err(redb_err)?;
        let id = id.value().to_string();
        let checkpoint = match &checkpoints {
            Some(t) => t
                .get(id.as_str())
                .map_err(redb_err)?
                .map(|v| v.value().to_vec()),
            None => None,
        };
        out.push(StoredJob {
            request: request.value().to_vec(),
            id,
            checkpoint,
        });
    }
    Ok(out)
}

/// Renames `file` to `file.corrupt-<unix ms>`.
fn set_aside(file: &Path) -> Result<PathBuf, StoreError> {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let mut name = file.as_os_str().to_owned();
    name.push(format!(".corrupt-{millis}"));
    let aside = PathBuf::from(name);
    std::fs::rename(file, &aside).map_err(|source| StoreError::SetAside {
        file: file.to_path_buf(),
        source,
    })?;
    Ok(aside)
}

/// A change to a detached job's records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobChange {
    /// A job submitted (or resumed): its request record; any older checkpoint is dropped.
    Request { id: String, record: Vec<u8> },
    /// Its latest checkpoint record (ignored once the job has ended).
    Checkpoint { id: String, record: Vec<u8> },
    /// It ended (answered, failed or cancelled): both records go.
    Ended { id: String },
}

enum Message {
    Put(StoredAnswer),
    Job(JobChange),
    Close,
}

/// The store's writer thread and the channel to it. See the module documentation.
pub struct Writer {
    sender: SyncSender<Message>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Answers not persisted: the channel was full (or the writer had stopped).
    dropped: AtomicU64,
}

impl Writer {
    /// Starts the writer thread, which owns `store` until [`Writer::close`].
    pub fn spawn(store: Store) -> std::io::Result<Writer> {
        let (sender, receiver) = sync_channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("npuzzle-store".into())
            .spawn(move || write_batches(store, receiver))?;
        Ok(Writer {
            sender,
            thread: Mutex::new(Some(thread)),
            dropped: AtomicU64::new(0),
        })
    }

    /// Queues `answer` for the store; never waits. Returns whether it was queued.
    pub fn save(&self, answer: StoredAnswer) -> bool {
        match self.sender.try_send(Message::Put(answer)) {
            Ok(()) => true,
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!(
                        "the answer store cannot keep up: answers are cached in memory only until it does"
                    );
                }
                false
            }
        }
    }

    /// Queues a change to a detached job's records; never waits (it is called from async
    /// tasks). Returns whether it was queued: not when the queue is full or the writer stopped.
    pub fn save_job(&self, change: JobChange) -> bool {
        self.sender.try_send(Message::Job(change)).is_ok()
    }

    /// Answers not persisted so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Writes what is queued, stops the thread and closes the file. Blocks: call it from a
    /// blocking context. Later [`Writer::save`]s are dropped.
    pub fn close(&self) {
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = thread {
            let _ = self.sender.send(Message::Close);
            if thread.join().is_err() {
                tracing::error!("the answer store's writer panicked");
            }
        }
    }
}

fn write_batches(mut store: Store, receiver: Receiver<Message>) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut jobs = Vec::new();
    let mut closing = false;
    while !closing {
        let mut next = receiver.recv().ok();
        while let Some(message) = next.take() {
            match message {
                Message::Put(answer) => batch.push(answer),
                Message::Job(change) => jobs.push(change),
                Message::Close => closing = true,
            }
            if !closing && batch.len() < BATCH && jobs.len() < BATCH {
                next = receiver.try_recv().ok();
            }
        }
        if batch.is_empty() && jobs.is_empty() && !closing {
            // The channel is closed: every sender is gone.
            closing = true;
        }
        if !batch.is_empty() {
            if let Err(e) = store.put(&batch) {
                tracing::warn!(error = %e, answers = batch.len(), "cannot write answers to the store");
            }
            batch.clear();
        }
        if !jobs.is_empty() {
            if let Err(e) = store.put_jobs(&jobs) {
                tracing::warn!(error = %e, changes = jobs.len(), "cannot write detached jobs' records to the store");
            }
            jobs.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(text: &str) -> Board {
        Board::parse(text, None).unwrap()
    }

    fn answer(tiles: &str, moves: &str) -> StoredAnswer {
        let board = board(tiles);
        StoredAnswer {
            goal: Goal::blank_last(board.shape()),
            board,
            path: parse_moves(moves).unwrap(),
        }
    }

    #[test]
    fn keys_round_trip_for_every_shape_and_goal() {
        for (w, h) in [(2, 2), (3, 2), (3, 3), (4, 4), (5, 5)] {
            let shape = Shape::new(w, h).unwrap();
            let tiles: Vec<u8> = (0..shape.cells() as u8).rev().collect();
            let b = Board::new(shape, &tiles).unwrap();
            for goal in [Goal::blank_first(shape), Goal::blank_last(shape)] {
                let key = encode_key(&b, &goal);
                assert_eq!(key.len(), 2 + 2 * shape.cells());
                assert_eq!(decode_key(&key), Ok((b, goal)));
            }
        }
    }

    #[test]
    fn the_key_encoding_is_fixed_byte_by_byte() {
        let b = board("1 2 3 0");
        let key = encode_key(&b, &Goal::blank_first(b.shape()));
        assert_eq!(key, [2, 2, 1, 2, 3, 0, 0, 1, 2, 3]);
    }

    #[test]
    fn keys_that_are_not_a_board_and_a_goal_do_not_decode() {
        for bad in [
            &[][..],
            &[2][..],
            &[2, 2, 1, 2, 3, 0][..],             // no goal
            &[2, 2, 1, 2, 3, 0, 0, 1, 2][..],    // short goal
            &[2, 2, 1, 1, 3, 0, 0, 1, 2, 3][..], // duplicate tile
            &[2, 2, 1, 2, 3, 9, 0, 1, 2, 3][..], // tile out of range
            &[9, 9, 0, 0][..],                   // no such shape
        ] {
            assert!(decode_key(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn answers_round_trip_through_the_file_and_stay_within_capacity() {
        let dir = tempfile::tempdir().unwrap();
        let opened = Store::open(dir.path(), 3).unwrap();
        assert!(opened.answers.is_empty() && opened.set_aside.is_none());
        let mut store = opened.store;
        let batch: Vec<StoredAnswer> = [
            ("1 2 3 4 5 6 7 0 8", "R"),
            ("1 2 3 4 5 6 0 7 8", "RR"),
            ("1 2 3 4 0 6 7 5 8", "DR"),
            ("1 2 3 0 4 6 7 5 8", "RDR"),
        ]
        .into_iter()
        .map(|(t, m)| answer(t, m))
        .collect();
        store.put(&batch).unwrap();
        assert_eq!(store.len().unwrap(), 3, "the oldest is pruned");
        drop(store);
        let opened = Store::open(dir.path(), 3).unwrap();
        assert_eq!(opened.valid, 3);
        assert_eq!(opened.dropped, 0);
        // Newest first until about 3 states: the last answer alone (4 states).
        assert_eq!(opened.answers, batch[3..].to_vec());
    }

    #[test]
    fn jobs_records_round_trip_and_go_when_their_job_ends() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), 10).unwrap().store;
        let change = |id: &str, kind: u8| {
            let id = id.to_string();
            let record = vec![kind; 3];
            match kind {
                0 => JobChange::Request { id, record },
                1 => JobChange::Checkpoint { id, record },
                _ => JobChange::Ended { id },
            }
        };
        store
            .put_jobs(&[
                change("a", 0),
                change("a", 1),
                change("b", 0),
                change("c", 1),
            ])
            .unwrap();
        drop(store);
        let opened = Store::open(dir.path(), 10).unwrap();
        let mut jobs = opened.jobs.clone();
        jobs.sort_by(|x, y| x.id.cmp(&y.id));
        let job = |id: &str, checkpoint: Option<Vec<u8>>| StoredJob {
            id: id.into(),
            request: vec![0; 3],
            checkpoint,
        };
        // A checkpoint of a job never submitted (or already ended) is not kept.
        assert_eq!(jobs, vec![job("a", Some(vec![1; 3])), job("b", None)]);
        let mut store = opened.store;
        store.put_jobs(&[change("a", 2)]).unwrap();
        drop(store);
        let opened = Store::open(dir.path(), 10).unwrap();
        assert_eq!(opened.jobs, vec![job("b", None)]);
    }

    #[test]
    fn a_store_of_another_version_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE_NAME);
        {
            let db = Database::create(&file).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(META)
                .unwrap()
                .insert(VERSION_KEY, FORMAT_VERSION + 1)
                .unwrap();
            txn.commit().unwrap();
        }
        let opened = Store::open(dir.path(), 10).unwrap();
        let (aside, reason) = opened.set_aside.unwrap();
        assert!(aside.exists() && file.exists());
        assert!(reason.contains("version"), "{reason}");
    }
}
