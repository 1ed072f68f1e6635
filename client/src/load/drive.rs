//! The request loop: client tasks take the next request as they are free, send it until it
//! has an answer (waiting out `RESOURCE_EXHAUSTED`) or its timeout passes, and judge the
//! answer ([`Verdict`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use npuzzle_proto::v1;
use npuzzle_solver::{Board, Goal, parse_moves};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tonic::{Code, Status};

use super::plan::{Kind, LoadPlan};
use super::workload::{Expect, Item};
use crate::remote;

/// The judgement of one answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Right,
    /// No answer came; why.
    Lost(String),
    /// An answer came and is not the right one; why.
    Wrong(String),
}

/// Codes that are an answer (the coordinator decided), as opposed to no answer.
pub(super) fn is_refusal(code: Code) -> bool {
    matches!(
        code,
        Code::InvalidArgument
            | Code::FailedPrecondition
            | Code::NotFound
            | Code::AlreadyExists
            | Code::OutOfRange
            | Code::Unimplemented
            | Code::PermissionDenied
            | Code::Unauthenticated
    )
}

pub(super) fn judge(
    expect: &Expect,
    goal: &Goal,
    answer: &Result<v1::SolveResponse, Status>,
) -> Verdict {
    let r = match answer {
        Err(s) if s.code() == Code::InvalidArgument && matches!(expect, Expect::Invalid(_)) => {
            return Verdict::Right;
        }
        Err(s) if is_refusal(s.code()) => {
            return Verdict::Wrong(format!("refused, {:?}: {}", s.code(), s.message()));
        }
        Err(s) => return Verdict::Lost(format!("{:?}: {}", s.code(), s.message())),
        Ok(r) => r,
    };
    let outcome = v1::Outcome::try_from(r.outcome);
    match (expect, outcome) {
        (_, Ok(v1::Outcome::Cancelled | v1::Outcome::DeadlineExceeded)) => Verdict::Lost(format!(
            "no answer: {:?} (lower bound {}) {}",
            r.outcome(),
            r.lower_bound,
            r.error
        )),
        (Expect::Invalid(_), _) => Verdict::Wrong(format!(
            "answered {:?} instead of INVALID_ARGUMENT",
            r.outcome()
        )),
        (Expect::Unsolvable { .. }, Ok(v1::Outcome::Unsolvable)) => Verdict::Right,
        (Expect::Unsolvable { .. }, _) => Verdict::Wrong(format!(
            "an unsolvable board came back {:?} ({:?})",
            r.outcome(),
            r.moves
        )),
        (Expect::Solved { board, optimum }, Ok(v1::Outcome::Solved)) => {
            check_path(board, goal, *optimum, r)
        }
        (Expect::Solved { .. }, _) => {
            Verdict::Wrong(format!("a solvable board came back {:?}", r.outcome()))
        }
    }
}

/// Replays the answer's path: it must reach the goal in exactly `optimum` moves.
pub(super) fn check_path(
    board: &Board,
    goal: &Goal,
    optimum: usize,
    r: &v1::SolveResponse,
) -> Verdict {
    let path = match parse_moves(&r.moves) {
        Ok(p) => p,
        Err(e) => return Verdict::Wrong(format!("unreadable moves {:?}: {e}", r.moves)),
    };
    match board.verify(&path, goal) {
        Err(e) => Verdict::Wrong(format!("{:?}: {e}", r.moves)),
        Ok(v) if !v.reaches_goal => Verdict::Wrong(format!(
            "the {} moves {:?} do not reach the goal",
            path.len(),
            r.moves
        )),
        Ok(_) if path.len() != optimum => Verdict::Wrong(format!(
            "{} moves {:?}: the optimum is {optimum}",
            path.len(),
            r.moves
        )),
        Ok(_) if r.length as usize != path.len() => Verdict::Wrong(format!(
            "length {} for a path of {} moves",
            r.length,
            path.len()
        )),
        Ok(_) => Verdict::Right,
    }
}

/// How a request went.
pub(super) struct Served {
    pub(super) kind: Kind,
    pub(super) verdict: Verdict,
    /// From the first try to the answer, retry waits included.
    pub(super) millis: f64,
    pub(super) retries: u64,
    pub(super) cached: bool,
    /// The outcome (`solved`, …) or the gRPC code (`InvalidArgument`, …) of the last try.
    pub(super) how: String,
    pub(super) request: String,
}

pub(super) fn how(answer: &Result<v1::SolveResponse, Status>) -> String {
    match answer {
        Ok(r) => match r.outcome() {
            v1::Outcome::Solved => "solved".into(),
            v1::Outcome::Unsolvable => "unsolvable".into(),
            v1::Outcome::Cancelled => "cancelled".into(),
            v1::Outcome::DeadlineExceeded => "deadline_exceeded".into(),
            v1::Outcome::InvalidArgument => "invalid_argument".into(),
            v1::Outcome::Unspecified => "unspecified".into(),
        },
        Err(s) => format!("{:?}", s.code()),
    }
}

/// Sends one request until it has an answer (retrying on `RESOURCE_EXHAUSTED`) or its timeout
/// passes, and judges the answer.
pub(super) async fn ask(
    client: &mut npuzzle_cluster::Coordinator,
    item: &Item,
    goal: &Goal,
    plan: &LoadPlan,
    rng: &mut impl Rng,
) -> Served {
    let started = Instant::now();
    let deadline = started + plan.timeout;
    let mut retries = 0u64;
    let answer = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut request = tonic::Request::new(item.request.clone());
        request.set_timeout(left);
        match tokio::time::timeout(left, client.solve(request)).await {
            Err(_) => {
                break Err(Status::deadline_exceeded(format!(
                    "no answer within {} ms ({retries} retries)",
                    plan.timeout.as_millis()
                )));
            }
            Ok(Err(s)) if s.code() == Code::ResourceExhausted => {
                // Between half and all of the hint, so that refused clients do not all come
                // back at the same instant.
                let wait = remote::retry_wait(&s, plan.max_retry_wait)
                    .mul_f64(rng.random_range(0.5..=1.0));
                if Instant::now() + wait >= deadline {
                    break Err(Status::resource_exhausted(format!(
                        "still refused after {retries} retries: {}",
                        s.message()
                    )));
                }
                retries += 1;
                tokio::time::sleep(wait).await;
            }
            Ok(answer) => break answer.map(tonic::Response::into_inner),
        }
    };
    Served {
        kind: item.kind,
        verdict: judge(&item.expect, goal, &answer),
        millis: started.elapsed().as_secs_f64() * 1e3,
        retries,
        cached: answer.as_ref().is_ok_and(|r| r.cached),
        how: how(&answer),
        request: item.expect.to_string(),
    }
}

/// What one phase (warm-up or measured run) produced.
pub(super) struct Phase {
    pub(super) answers: Vec<Served>,
    /// Requests taken by a client whose task ended without an answer (a panic): lost.
    pub(super) vanished: usize,
    pub(super) not_sent: usize,
    pub(super) elapsed: Duration,
}

/// Sends `items` from `plan.clients` concurrent tasks over `clients` (round robin), starting
/// none after `stop_at`.
pub(super) async fn drive(
    clients: &[npuzzle_cluster::Coordinator],
    items: Arc<Vec<Item>>,
    plan: &LoadPlan,
    stop_at: Option<Instant>,
    seed: u64,
) -> Phase {
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let goal = Goal::blank_last(plan.shape);
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..plan.clients.clamp(1, items.len().max(1)) {
        let mut client = clients[c % clients.len()].clone();
        let (items, next, plan) = (Arc::clone(&items), Arc::clone(&next), plan.clone());
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (c as u64).wrapping_mul(0x9E37_79B9));
        tasks.spawn(async move {
            let mut answers = Vec::new();
            while stop_at.is_none_or(|t| Instant::now() < t) {
                let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    break;
                };
                answers.push(ask(&mut client, item, &goal, &plan, &mut rng).await);
            }
            answers
        });
    }
    let mut answers = Vec::with_capacity(items.len());
    while let Some(done) = tasks.join_next().await {
        if let Ok(mut part) = done {
            answers.append(&mut part);
        }
    }
    let taken = next.load(Ordering::Relaxed).min(items.len());
    Phase {
        vanished: taken - answers.len().min(taken),
        not_sent: items.len() - taken,
        answers,
        elapsed: started.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use npuzzle_solver::Board;

    use super::*;
    use crate::load::workload::Malformed;

    #[test]
    fn a_detour_a_wrong_path_and_a_wrong_outcome_are_judged_wrong() {
        let board = Board::parse("1 2 3 4 5 6 0 7 8", None).unwrap();
        let goal = Goal::blank_last(board.shape());
        let expect = Expect::Solved { board, optimum: 2 };
        let answer = |moves: &str, outcome: v1::Outcome| {
            Ok(v1::SolveResponse {
                outcome: outcome as i32,
                moves: moves.into(),
                length: moves.len() as u32,
                ..Default::default()
            })
        };
        let solved = v1::Outcome::Solved;
        assert_eq!(judge(&expect, &goal, &answer("RR", solved)), Verdict::Right);
        for wrong in [
            answer("RRUD", solved),
            answer("R", solved),
            answer("LL", solved),
            answer("", v1::Outcome::Unsolvable),
            Err(Status::invalid_argument("no")),
        ] {
            assert!(
                matches!(judge(&expect, &goal, &wrong), Verdict::Wrong(_)),
                "{wrong:?}"
            );
        }
        for lost in [
            answer("", v1::Outcome::Cancelled),
            Err(Status::unavailable("down")),
        ] {
            assert!(
                matches!(judge(&expect, &goal, &lost), Verdict::Lost(_)),
                "{lost:?}"
            );
        }
        let invalid = Expect::Invalid(Malformed::WidthZero);
        assert_eq!(
            judge(&invalid, &goal, &Err(Status::invalid_argument("width"))),
            Verdict::Right
        );
        assert!(matches!(
            judge(&invalid, &goal, &answer("", v1::Outcome::Unsolvable)),
            Verdict::Wrong(_)
        ));
    }

    #[test]
    fn the_retry_wait_follows_the_hint_up_to_the_cap() {
        let mut refused = Status::resource_exhausted("busy");
        refused.metadata_mut().insert(
            "retry-after-ms",
            tonic::metadata::MetadataValue::from(1000u32),
        );
        let cap = Duration::from_millis(50);
        assert_eq!(remote::retry_wait(&refused, cap), cap);
        assert_eq!(
            remote::retry_wait(&refused, Duration::from_secs(5)),
            Duration::from_secs(1)
        );
        assert_eq!(
            remote::retry_wait(&Status::resource_exhausted("busy"), cap),
            cap
        );
    }
}
