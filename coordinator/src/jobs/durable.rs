//! Detached jobs that outlive the coordinator: their records in the store, and their resumption
//! when a coordinator starts on the same `--cache-dir`.
//!
//! Each job kept in the store has two records (see `store.rs`): its *request* (the puzzle as
//! submitted, and how many times it was resumed), written when it is submitted, and its latest
//! *checkpoint* ([`crate::scheduler::Checkpoint`]), written by the job's task at each new bound
//! and every [`crate::Config::checkpoint_every`] within one. Both go when the job ends, unless
//! it ends because the coordinator is stopping.
//!
//! A record is JSON behind the SHA-256 of its bytes, and names its kind, its format version and
//! its job. Nothing read back is trusted: a record whose digest, kind, version or job does not
//! match is refused with a log line that names the job and why. A refused checkpoint leaves the
//! job to start again from its first bound (still optimal); a refused request drops the job,
//! whose puzzle is then unknown. The scheduler checks what a checkpoint says against the puzzle
//! in turn (every unit and task replayed from the root).

use std::sync::Arc;
use std::time::{Duration, Instant};

use npuzzle_proto::v1;
use prost::Message as _;
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::scheduler::{Checkpoint, JobId};
use crate::solve::Pipeline;
use crate::store::{JobChange, StoredJob, Writer};

/// The layout of both records: another version is refused.
const RECORD_VERSION: u32 = 1;
const DIGEST_LEN: usize = 32;

/// Why a stored record is not used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadRecord {
    #[error("shorter than its digest")]
    Short,
    #[error("its SHA-256 does not match its contents (corrupt)")]
    Digest,
    #[error("not a record this coordinator reads: {0}")]
    Json(#[from] serde_json::Error),
    #[error(
        "a {found} record of version {version}, expected a {expected} record of version {RECORD_VERSION}"
    )]
    Kind {
        found: String,
        version: u32,
        expected: &'static str,
    },
    #[error("the record of job {found}, stored under {expected}")]
    Foreign { found: String, expected: String },
    #[error("its request does not decode: {0}")]
    Request(#[from] prost::DecodeError),
}

#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    kind: String,
    version: u32,
    job: String,
    body: T,
}

/// What a job's request record holds.
#[derive(Serialize, Deserialize)]
struct RequestBody {
    /// The `SolveRequest`, protobuf-encoded.
    request: Vec<u8>,
    /// Times the job was resumed from a checkpoint so far.
    resumed: u32,
}

fn encode<T: Serialize>(kind: &str, job: &str, body: T) -> Vec<u8> {
    let envelope = Envelope {
        kind: kind.to_string(),
        version: RECORD_VERSION,
        job: job.to_string(),
        body,
    };
    // Serializing plain data to a vector cannot fail.
    let json = serde_json::to_vec(&envelope).unwrap_or_default();
    let digest = ring::digest::digest(&ring::digest::SHA256, &json);
    let mut record = digest.as_ref().to_vec();
    record.extend_from_slice(&json);
    record
}

fn decode<T: DeserializeOwned>(
    kind: &'static str,
    job: &str,
    record: &[u8],
) -> Result<T, BadRecord> {
    if record.len() < DIGEST_LEN {
        return Err(BadRecord::Short);
    }
    let (digest, json) = record.split_at(DIGEST_LEN);
    if ring::digest::digest(&ring::digest::SHA256, json).as_ref() != digest {
        return Err(BadRecord::Digest);
    }
    // The envelope first: a record of another kind is named as such, not as a bad body.
    let envelope: Envelope<serde_json::Value> = serde_json::from_slice(json)?;
    if envelope.kind != kind || envelope.version != RECORD_VERSION {
        return Err(BadRecord::Kind {
            found: envelope.kind,
            version: envelope.version,
            expected: kind,
        });
    }
    if envelope.job != job {
        return Err(BadRecord::Foreign {
            found: envelope.job,
            expected: job.to_string(),
        });
    }
    Ok(serde_json::from_value(envelope.body)?)
}

/// The request record of job `id`.
pub(crate) fn request_record(id: &str, request: &v1::SolveRequest, resumed: u32) -> Vec<u8> {
    let body = RequestBody {
        request: request.encode_to_vec(),
        resumed,
    };
    encode("request", id, body)
}

/// Job `id`'s request and resume count, from its record.
pub(crate) fn read_request(id: &str, record: &[u8]) -> Result<(v1::SolveRequest, u32), BadRecord> {
    let body: RequestBody = decode("request", id, record)?;
    Ok((
        v1::SolveRequest::decode(body.request.as_slice())?,
        body.resumed,
    ))
}

/// The checkpoint record of job `id`.
pub(crate) fn checkpoint_record(id: &str, checkpoint: &Checkpoint) -> Vec<u8> {
    encode("checkpoint", id, checkpoint)
}

/// Job `id`'s checkpoint, from its record.
pub(crate) fn read_checkpoint(id: &str, record: &[u8]) -> Result<Checkpoint, BadRecord> {
    decode("checkpoint", id, record)
}

/// A stored job to start again: its request, and the checkpoint to resume from, if one was
/// accepted.
pub(crate) struct Resumable {
    pub id: String,
    pub request: v1::SolveRequest,
    pub checkpoint: Option<Checkpoint>,
    /// Times resumed from a checkpoint, this time included.
    pub resumed: u32,
}

/// Reads back the jobs the store kept: refused records are logged (and a job whose request is
/// refused is forgotten there).
pub(crate) fn resumable(store: Option<&Writer>, stored: Vec<StoredJob>) -> Vec<Resumable> {
    let mut out = Vec::new();
    for job in stored {
        let (request, resumed) = match read_request(&job.id, &job.request) {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(job = %job.id, error = %e, "a detached job's stored request is refused; the job is dropped");
                save(store, JobChange::Ended { id: job.id });
                continue;
            }
        };
        let checkpoint = match job
            .checkpoint
            .as_deref()
            .map(|r| read_checkpoint(&job.id, r))
        {
            Some(Ok(checkpoint)) => Some(checkpoint),
            Some(Err(e)) => {
                tracing::warn!(job = %job.id, error = %e, "a detached job's checkpoint is refused; the job starts again from its first bound");
                None
            }
            None => None,
        };
        let resumed = resumed.saturating_add(u32::from(checkpoint.is_some()));
        out.push(Resumable {
            id: job.id,
            request,
            checkpoint,
            resumed,
        });
    }
    out
}

/// How often a running job looks whether its bound changed (then it writes a checkpoint).
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// How long tasks asked back before a checkpoint are given to answer (an honest worker stops
/// within a few thousand nodes).
const HAND_BACK_WAIT: Duration = Duration::from_millis(200);

/// Queues a change to the jobs' records, if there is a store. A full queue drops it with a
/// log line (a checkpoint comes again soon; a lost request record only makes the job not
/// survive a restart).
pub(crate) fn save(store: Option<&Writer>, change: JobChange) {
    if let Some(store) = store
        && !store.save_job(change)
    {
        tracing::warn!(
            "the store's queue is full (or its writer stopped): a detached job's record was not written"
        );
    }
}

/// Writes checkpoints of flight `flight()` (0 until the job has joined one) for job `id`,
/// at each new bound and at least every `checkpoint_every` within one, until dropped.
pub(crate) async fn checkpoint_loop(
    pipeline: Arc<Pipeline>,
    every: Duration,
    id: String,
    flight: impl Fn() -> u64,
    bound: impl Fn() -> u32,
) {
    let Some(store) = pipeline.searches.store() else {
        return std::future::pending().await;
    };
    let mut look = tokio::time::interval(LOOK_EVERY);
    look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last = (0u32, Instant::now());
    loop {
        look.tick().await;
        let (job, now_bound) = (flight(), bound());
        // Looked at once a second: due half a look early rather than half a look late.
        let due = !every.is_zero() && last.1.elapsed() + LOOK_EVERY / 2 >= every;
        if job == 0 || now_bound == 0 || (now_bound == last.0 && !due) {
            continue;
        }
        // Tasks that have run long give back their rest first, so that a restart does not
        // lose what they searched; the checkpoint is taken once they have answered.
        pipeline
            .scheduler
            .ask_back_for_checkpoint(JobId(job), every.max(LOOK_EVERY));
        tokio::time::sleep(HAND_BACK_WAIT).await;
        let took = Instant::now();
        let Some(checkpoint) = pipeline.scheduler.checkpoint(JobId(job)).await else {
            continue;
        };
        let record = checkpoint_record(&id, &checkpoint);
        tracing::debug!(
            job = %id,
            bound = checkpoint.bound,
            pending = checkpoint.pending.len(),
            bytes = record.len(),
            micros = took.elapsed().as_micros() as u64,
            "checkpoint"
        );
        save(
            Some(store),
            JobChange::Checkpoint {
                id: id.clone(),
                record,
            },
        );
        last = (checkpoint.bound, Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint() -> Checkpoint {
        Checkpoint {
            bound: 50,
            bounds: vec![46, 48, 50],
            bound_nodes: vec![10, 60],
            nodes: 70,
            next_bound: u32::MAX,
            units: Vec::new(),
            pending: Vec::new(),
            claims: Vec::new(),
            probation_claims: Vec::new(),
            deferred: Vec::new(),
            splits: 0,
            lies_seen: 0,
        }
    }

    #[test]
    fn records_read_back_as_written() {
        let request = v1::SolveRequest {
            timeout_ms: 5,
            ..Default::default()
        };
        let record = request_record("00000000000000aa", &request, 2);
        let (read, resumed) = read_request("00000000000000aa", &record).unwrap();
        assert_eq!((read, resumed), (request, 2));
        let record = checkpoint_record("00000000000000aa", &checkpoint());
        assert_eq!(
            read_checkpoint("00000000000000aa", &record).unwrap(),
            checkpoint()
        );
    }

    #[test]
    fn a_flipped_byte_a_foreign_job_or_another_kind_is_refused() {
        let record = checkpoint_record("00000000000000aa", &checkpoint());
        for at in [0, DIGEST_LEN, record.len() / 2, record.len() - 1] {
            let mut bad = record.clone();
            bad[at] ^= 0x01;
            assert!(
                matches!(
                    read_checkpoint("00000000000000aa", &bad),
                    Err(BadRecord::Digest)
                ),
                "byte {at}"
            );
        }
        assert!(matches!(
            read_checkpoint("00000000000000bb", &record),
            Err(BadRecord::Foreign { .. })
        ));
        assert!(matches!(
            read_request("00000000000000aa", &record),
            Err(BadRecord::Kind { .. })
        ));
        assert!(matches!(
            read_checkpoint("00000000000000aa", &record[..10]),
            Err(BadRecord::Short)
        ));
    }
}
