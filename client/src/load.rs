//! `npuzzle load`: a load test. Many concurrent clients send one coordinator a mix of boards it
//! has answered before (cache hits), new solvable boards, malformed requests and unsolvable
//! boards, and every answer is checked here:
//!
//! - a solvable board: the path is replayed on the board, must reach the goal, and must be as
//!   long as the optimum computed in this process (the exact table up to 9 cells, IDA* with
//!   linear conflict above: larger boards are random walks, so that this stays quick);
//! - an unsolvable board (a solvable one with two tiles swapped): `OUTCOME_UNSOLVABLE`;
//! - a malformed request (wrong tile count, a duplicate tile, width 0, …): `INVALID_ARGUMENT`;
//! - `RESOURCE_EXHAUSTED` (past the coordinator's `--max-searches`) is no answer yet: the client
//!   waits the `retry-after-ms` hint (at most [`LoadPlan::max_retry_wait`]), asks again and counts
//!   the retry.
//!
//! Anything else is **lost** (no answer within [`LoadPlan::timeout`]: a transport error,
//! `UNAVAILABLE`, a search cancelled or past its deadline, still `RESOURCE_EXHAUSTED` at the
//! timeout) or **wrong** (an answer that is not the right one). The [`LoadReport`] counts them by
//! kind, with throughput and latency percentiles.
//!
//! The workload is drawn from [`LoadPlan::seed`] before anything is sent: the same seed sends the
//! same requests (in an order that depends on timing, as clients take the next request when
//! they are free).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use npuzzle_proto::security::ClientSecurity;
use npuzzle_proto::{board_to_wire, v1};
use npuzzle_solver::{
    Board, EXACT_MAX_CELLS, Goal, HeuristicKind, Limits, SearchOutcome, Shape, Solver, parse_moves,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use tonic::{Code, Status};

use crate::cluster_bench::percentile;
use crate::remote;
use crate::tools::{Generate, random_board};

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

    fn total(&self) -> u64 {
        Kind::ALL.iter().map(|&k| self.weight(k) as u64).sum()
    }

    /// A kind drawn with these weights (the total must not be 0).
    fn draw(&self, rng: &mut impl Rng) -> Kind {
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

/// How long [`run`] waits for a worker to join the coordinator.
const JOIN_TIMEOUT: Duration = Duration::from_secs(60);

/// Failures reported in full, at most.
const FAILURES_SHOWN: usize = 20;

/// Why a load test could not run (lost and wrong answers are not errors: they are in the report).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "{shape} boards need --walk K: the optimum of a uniformly random one takes far too long to check"
    )]
    NeedsWalk { shape: Shape },
    #[error("the mix asks for cached boards but --warm is 0: there is nothing to repeat")]
    NothingToRepeat,
    #[error(transparent)]
    Mix(#[from] MixError),
    #[error("cannot reach the coordinator at {url}: {source}")]
    Connect {
        url: String,
        source: remote::ConnectError,
    },
    #[error("the coordinator at {url} did not answer Stats: {}", .status.message())]
    Stats { url: String, status: Status },
    #[error("no worker joined the coordinator at {url} within {} s", JOIN_TIMEOUT.as_secs())]
    NoWorker { url: String },
    #[error("cannot find the optimum of {board}: {why}")]
    Optimum { board: String, why: String },
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

/// Ways a request is malformed; each must come back `INVALID_ARGUMENT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Malformed {
    TooManyTiles,
    TooFewTiles,
    DuplicateTile,
    TileOutOfRange,
    WidthZero,
    LargerThan5x5,
    NoBoard,
    UnknownHeuristic,
    CustomGoalWithoutTiles,
}

impl Malformed {
    const ALL: [Malformed; 9] = [
        Malformed::TooManyTiles,
        Malformed::TooFewTiles,
        Malformed::DuplicateTile,
        Malformed::TileOutOfRange,
        Malformed::WidthZero,
        Malformed::LargerThan5x5,
        Malformed::NoBoard,
        Malformed::UnknownHeuristic,
        Malformed::CustomGoalWithoutTiles,
    ];

    fn describe(self) -> &'static str {
        match self {
            Malformed::TooManyTiles => "one tile too many",
            Malformed::TooFewTiles => "one tile too few",
            Malformed::DuplicateTile => "a duplicate tile",
            Malformed::TileOutOfRange => "a tile out of range",
            Malformed::WidthZero => "width 0",
            Malformed::LargerThan5x5 => "a 6x6 board",
            Malformed::NoBoard => "no board",
            Malformed::UnknownHeuristic => "heuristic 99",
            Malformed::CustomGoalWithoutTiles => "a custom goal without tiles",
        }
    }

    /// The request for `board`, spoilt this way.
    fn spoil(self, board: &Board) -> v1::SolveRequest {
        let mut request = solve_request(board);
        let mut wire = board_to_wire(board);
        let cells = wire.tiles.len();
        match self {
            Malformed::TooManyTiles => wire.tiles.push(cells as u32),
            Malformed::TooFewTiles => {
                wire.tiles.pop();
            }
            Malformed::DuplicateTile => wire.tiles[1] = wire.tiles[0],
            Malformed::TileOutOfRange => wire.tiles[cells - 1] = cells as u32,
            Malformed::WidthZero => wire.width = 0,
            Malformed::LargerThan5x5 => {
                wire.width = 6;
                wire.height = 6;
                wire.tiles = (0..36).collect();
            }
            Malformed::NoBoard => {}
            Malformed::UnknownHeuristic => request.heuristic = 99,
            Malformed::CustomGoalWithoutTiles => {
                request.goal = Some(v1::Goal {
                    kind: v1::GoalKind::Custom as i32,
                    tiles: vec![],
                });
            }
        }
        request.board = (self != Malformed::NoBoard).then_some(wire);
        request
    }
}

/// A well-formed request for `board` towards the blank-last goal, heuristic `auto`.
fn solve_request(board: &Board) -> v1::SolveRequest {
    v1::SolveRequest {
        board: Some(board_to_wire(board)),
        goal: Some(v1::Goal {
            kind: v1::GoalKind::BlankLast as i32,
            tiles: vec![],
        }),
        heuristic: v1::Heuristic::Auto as i32,
        ..Default::default()
    }
}

/// What a request must get back.
#[derive(Clone, Debug)]
enum Expect {
    /// A path from the board to the goal of exactly `optimum` moves.
    Solved {
        board: Board,
        optimum: usize,
    },
    Unsolvable {
        board: Board,
    },
    /// `INVALID_ARGUMENT`.
    Invalid(Malformed),
}

impl fmt::Display for Expect {
    /// The request, for a failure's description.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Solved { board, .. } | Expect::Unsolvable { board } => write!(f, "[{board}]"),
            Expect::Invalid(m) => write!(f, "({})", m.describe()),
        }
    }
}

/// One request of the workload and what it must get back.
struct Item {
    kind: Kind,
    request: v1::SolveRequest,
    expect: Expect,
}

/// Everything to send: the warm-up first, then the measured run.
struct Workload {
    warm: Vec<Item>,
    run: Vec<Item>,
}

/// A solvable board not drawn before (unless the shape has too few states to find one).
fn fresh(goal: &Goal, generate: Generate, seen: &mut HashSet<Board>, rng: &mut impl Rng) -> Board {
    for _ in 0..100 {
        let board = random_board(goal, generate, rng);
        if seen.insert(board) {
            return board;
        }
    }
    random_board(goal, generate, rng)
}

/// `board` with two of its tiles (not the blank) swapped: the other parity, so unsolvable.
fn swapped(board: &Board, rng: &mut impl Rng) -> Board {
    let mut tiles = board.tiles().to_vec();
    let filled: Vec<usize> = (0..tiles.len()).filter(|&i| tiles[i] != 0).collect();
    let a = rng.random_range(0..filled.len());
    let mut b = rng.random_range(0..filled.len() - 1);
    if b >= a {
        b += 1;
    }
    tiles.swap(filled[a], filled[b]);
    Board::new(board.shape(), &tiles).expect("a permutation of a board's tiles is a board")
}

/// The optimum of each board, computed on every core.
fn optima(goal: &Goal, boards: Vec<Board>) -> Result<HashMap<Board, usize>, LoadError> {
    let kind = HeuristicKind::best_for(goal.shape());
    let solver = Solver::new(*goal, kind).map_err(|e| LoadError::Optimum {
        board: goal.board().to_string(),
        why: e.to_string(),
    })?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = boards.len().div_ceil(threads).max(1);
    let optimum = |board: &Board| match solver.solve(board, &Limits::default()) {
        Ok(report) => match report.outcome {
            SearchOutcome::Solved(path) => Ok((*board, path.len())),
            other => Err(LoadError::Optimum {
                board: board.to_string(),
                why: format!("the search ended {other:?}"),
            }),
        },
        Err(e) => Err(LoadError::Optimum {
            board: board.to_string(),
            why: e.to_string(),
        }),
    };
    std::thread::scope(|scope| {
        let parts: Vec<_> = boards
            .chunks(chunk)
            .map(|part| scope.spawn(|| part.iter().map(optimum).collect::<Vec<_>>()))
            .collect();
        let mut found = HashMap::with_capacity(boards.len());
        for part in parts {
            let part = part
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            for entry in part {
                let (board, length) = entry?;
                found.insert(board, length);
            }
        }
        Ok(found)
    })
}

/// Draws the workload from the plan's seed and computes every solvable board's optimum.
fn workload(plan: &LoadPlan) -> Result<Workload, LoadError> {
    let goal = Goal::blank_last(plan.shape);
    let generate = plan.walk.map_or(Generate::Uniform, Generate::Walk);
    let mut rng = ChaCha8Rng::seed_from_u64(plan.seed);
    let mut seen = HashSet::new();
    let warm: Vec<Board> = (0..plan.warm)
        .map(|_| fresh(&goal, generate, &mut seen, &mut rng))
        .collect();
    let mut malformed = Malformed::ALL.iter().cycle();
    let drafts: Vec<(Kind, Board, Option<Malformed>)> = (0..plan.requests)
        .map(|_| {
            let kind = plan.mix.draw(&mut rng);
            let board = match kind {
                Kind::Cached => warm[rng.random_range(0..warm.len())],
                Kind::New => fresh(&goal, generate, &mut seen, &mut rng),
                Kind::Invalid | Kind::Unsolvable => random_board(&goal, generate, &mut rng),
            };
            match kind {
                Kind::Unsolvable => (kind, swapped(&board, &mut rng), None),
                Kind::Invalid => (kind, board, malformed.next().copied()),
                _ => (kind, board, None),
            }
        })
        .collect();
    let solvable: HashSet<Board> = warm
        .iter()
        .copied()
        .chain(
            drafts
                .iter()
                .filter(|(k, ..)| matches!(k, Kind::Cached | Kind::New))
                .map(|(_, b, _)| *b),
        )
        .collect();
    let optima = optima(&goal, solvable.into_iter().collect())?;
    let solved = |kind, board: Board| -> Result<Item, LoadError> {
        let optimum = *optima.get(&board).ok_or_else(|| LoadError::Optimum {
            board: board.to_string(),
            why: "not computed".into(),
        })?;
        Ok(Item {
            kind,
            request: solve_request(&board),
            expect: Expect::Solved { board, optimum },
        })
    };
    let warm = warm
        .into_iter()
        .map(|b| solved(Kind::New, b))
        .collect::<Result<_, _>>()?;
    let run = drafts
        .into_iter()
        .map(|(kind, board, malformed)| match (kind, malformed) {
            (Kind::Invalid, Some(m)) => Ok(Item {
                kind,
                request: m.spoil(&board),
                expect: Expect::Invalid(m),
            }),
            (Kind::Unsolvable, _) => Ok(Item {
                kind,
                request: solve_request(&board),
                expect: Expect::Unsolvable { board },
            }),
            _ => solved(kind, board),
        })
        .collect::<Result<_, _>>()?;
    Ok(Workload { warm, run })
}

/// The judgement of one answer.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Verdict {
    Right,
    /// No answer came; why.
    Lost(String),
    /// An answer came and is not the right one; why.
    Wrong(String),
}

/// Codes that are an answer (the coordinator decided), as opposed to no answer.
fn is_refusal(code: Code) -> bool {
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

fn judge(expect: &Expect, goal: &Goal, answer: &Result<v1::SolveResponse, Status>) -> Verdict {
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
fn check_path(board: &Board, goal: &Goal, optimum: usize, r: &v1::SolveResponse) -> Verdict {
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
struct Answer {
    kind: Kind,
    verdict: Verdict,
    /// From the first try to the answer, retry waits included.
    millis: f64,
    retries: u64,
    cached: bool,
    /// The outcome (`solved`, …) or the gRPC code (`InvalidArgument`, …) of the last try.
    how: String,
    request: String,
}

fn how(answer: &Result<v1::SolveResponse, Status>) -> String {
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
async fn ask(
    client: &mut remote::Coordinator,
    item: &Item,
    goal: &Goal,
    plan: &LoadPlan,
    rng: &mut impl Rng,
) -> Answer {
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
    Answer {
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
struct Phase {
    answers: Vec<Answer>,
    /// Requests taken by a client whose task ended without an answer (a panic): lost.
    vanished: usize,
    not_sent: usize,
    elapsed: Duration,
}

/// Sends `items` from `plan.clients` concurrent tasks over `clients` (round robin), starting
/// none after `stop_at`.
async fn drive(
    clients: &[remote::Coordinator],
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

/// Latency percentiles, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Latency {
    fn of(mut millis: Vec<f64>) -> Option<Latency> {
        if millis.is_empty() {
            return None;
        }
        millis.sort_by(f64::total_cmp);
        Some(Latency {
            p50: percentile(&millis, 0.5),
            p90: percentile(&millis, 0.9),
            p99: percentile(&millis, 0.99),
            max: millis[millis.len() - 1],
            mean: millis.iter().sum::<f64>() / millis.len() as f64,
        })
    }
}

/// The counts of one kind (or of all).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Tally {
    pub requests: usize,
    pub ok: usize,
    pub lost: usize,
    pub wrong: usize,
    /// `RESOURCE_EXHAUSTED` answers waited out and asked again (not lost).
    pub retries: u64,
    /// Answers the coordinator gave from its cache.
    pub cache_hits: usize,
    /// From the first try to the answer, retry waits included; `None` without requests.
    pub latency_ms: Option<Latency>,
}

impl Tally {
    fn of<'a>(answers: impl Iterator<Item = &'a Answer>) -> Tally {
        let mut tally = Tally::default();
        let mut millis = Vec::new();
        for a in answers {
            tally.requests += 1;
            match a.verdict {
                Verdict::Right => tally.ok += 1,
                Verdict::Lost(_) => tally.lost += 1,
                Verdict::Wrong(_) => tally.wrong += 1,
            }
            tally.retries += a.retries;
            tally.cache_hits += a.cached as usize;
            millis.push(a.millis);
        }
        tally.latency_ms = Latency::of(millis);
        tally
    }

    /// Requests taken by a client task that ended without answers: lost.
    fn with_vanished(mut self, vanished: usize) -> Tally {
        self.requests += vanished;
        self.lost += vanished;
        self
    }
}

/// What a load test found.
#[derive(Clone, Debug, Serialize)]
pub struct LoadReport {
    pub coordinator: String,
    /// Workers and search slots the coordinator counted at the start.
    pub workers: u32,
    pub slots: u32,
    pub shape: String,
    pub walk: Option<usize>,
    pub mix: String,
    pub seed: u64,
    pub clients: usize,
    pub connections: usize,
    /// The warm-up: each board the `cached` kind repeats, sent once before the measured run.
    pub warmup: Tally,
    pub warmup_s: f64,
    /// The measured run, by kind.
    pub kinds: BTreeMap<&'static str, Tally>,
    /// The measured run, all kinds.
    pub total: Tally,
    /// Requests of the measured run not started: the duration cap ended it first.
    pub not_sent: usize,
    /// How each answer of the measured run came back: an outcome (`solved`, `unsolvable`, …)
    /// or, for a refusal or no answer, the gRPC code (`InvalidArgument`, …).
    pub answers: BTreeMap<String, usize>,
    /// The measured run's wall time, and its answers per second.
    pub wall_s: f64,
    pub throughput_rps: f64,
    /// Lost and wrong answers, warm-up included: the run passes when both are 0.
    pub lost: usize,
    pub wrong: usize,
    pub passed: bool,
    /// The first lost or wrong answers, described.
    pub failures: Vec<String>,
}

/// Connects `plan.connections` channels (one per client when 0) to the coordinator at `url`,
/// waits for a worker, sends the warm-up and then the measured run, and reports.
pub async fn run(
    url: &str,
    security: &ClientSecurity,
    plan: &LoadPlan,
) -> Result<LoadReport, LoadError> {
    plan.check()?;
    let connections = match plan.connections {
        0 => plan.clients.max(1),
        n => n,
    };
    let mut clients = Vec::with_capacity(connections);
    for _ in 0..connections {
        let client = remote::connect(url, security)
            .await
            .map_err(|source| LoadError::Connect {
                url: url.to_string(),
                source,
            })?;
        clients.push(client);
    }
    let stats = joined(&mut clients[0], url).await?;

    let drawn = plan.clone();
    let Workload { warm, run } = tokio::task::spawn_blocking(move || workload(&drawn))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;

    let warm = drive(&clients, Arc::new(warm), plan, None, plan.seed).await;
    let stop_at = Instant::now() + plan.duration;
    let measured = drive(&clients, Arc::new(run), plan, Some(stop_at), !plan.seed).await;

    let warmup = Tally::of(warm.answers.iter()).with_vanished(warm.vanished);
    let total = Tally::of(measured.answers.iter()).with_vanished(measured.vanished);
    let kinds = Kind::ALL
        .iter()
        .map(|&k| {
            let tally = Tally::of(measured.answers.iter().filter(|a| a.kind == k));
            (k.name(), tally)
        })
        .collect();
    let mut answers = BTreeMap::new();
    for a in &measured.answers {
        *answers.entry(a.how.clone()).or_insert(0) += 1;
    }
    let mut failures = Vec::new();
    for (phase, a) in warm
        .answers
        .iter()
        .map(|a| ("warm-up", a))
        .chain(measured.answers.iter().map(|a| ("run", a)))
    {
        let (what, why) = match &a.verdict {
            Verdict::Right => continue,
            Verdict::Lost(why) => ("lost", why),
            Verdict::Wrong(why) => ("wrong", why),
        };
        if failures.len() < FAILURES_SHOWN {
            failures.push(format!(
                "{what}: {phase} {} {}: {why}",
                a.kind.name(),
                a.request
            ));
        }
    }
    for (phase, n) in [("warm-up", warm.vanished), ("run", measured.vanished)] {
        if n > 0 {
            failures.push(format!(
                "lost: {phase}: {n} requests of a client task that failed"
            ));
        }
    }
    let wall_s = measured.elapsed.as_secs_f64();
    let lost = warmup.lost + total.lost;
    let wrong = warmup.wrong + total.wrong;
    Ok(LoadReport {
        coordinator: url.to_string(),
        workers: stats.workers,
        slots: stats.slots,
        shape: plan.shape.to_string(),
        walk: plan.walk,
        mix: plan.mix.to_string(),
        seed: plan.seed,
        clients: plan.clients,
        connections,
        throughput_rps: if wall_s > 0.0 {
            total.requests as f64 / wall_s
        } else {
            0.0
        },
        warmup,
        warmup_s: warm.elapsed.as_secs_f64(),
        kinds,
        total,
        not_sent: measured.not_sent,
        answers,
        wall_s,
        lost,
        wrong,
        passed: lost == 0 && wrong == 0,
        failures,
    })
}

/// Waits until the coordinator counts a worker (at most [`JOIN_TIMEOUT`]), and returns its stats.
async fn joined(
    client: &mut remote::Coordinator,
    url: &str,
) -> Result<v1::StatsResponse, LoadError> {
    let started = Instant::now();
    loop {
        let stats = client
            .stats(v1::StatsRequest {})
            .await
            .map_err(|status| LoadError::Stats {
                url: url.to_string(),
                status,
            })?
            .into_inner();
        if stats.workers > 0 {
            return Ok(stats);
        }
        if started.elapsed() > JOIN_TIMEOUT {
            return Err(LoadError::NoWorker {
                url: url.to_string(),
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let boards = match self.walk {
            Some(k) => format!("random walks of {k} moves"),
            None => "uniformly random".to_string(),
        };
        writeln!(
            f,
            "load: {} requests ({}), {} clients on {} connections; {} boards, {boards}; seed {}",
            self.total.requests + self.not_sent,
            self.mix,
            self.clients,
            self.connections,
            self.shape,
            self.seed
        )?;
        writeln!(
            f,
            "coordinator {}: {} worker(s), {} slot(s)",
            self.coordinator, self.workers, self.slots
        )?;
        writeln!(
            f,
            "warm-up: {} boards in {:.3} s: {} ok, {} lost, {} wrong, {} retries",
            self.warmup.requests,
            self.warmup_s,
            self.warmup.ok,
            self.warmup.lost,
            self.warmup.wrong,
            self.warmup.retries
        )?;
        writeln!(
            f,
            "{:<11}{:>9}{:>9}{:>6}{:>7}{:>9}{:>11}{:>10}{:>10}{:>10}{:>10}",
            "kind",
            "requests",
            "ok",
            "lost",
            "wrong",
            "retries",
            "cache_hits",
            "p50_ms",
            "p90_ms",
            "p99_ms",
            "max_ms"
        )?;
        let empty = Tally::default();
        let rows = Kind::ALL
            .iter()
            .map(|k| (k.name(), self.kinds.get(k.name()).unwrap_or(&empty)))
            .chain([("all", &self.total)]);
        for (name, t) in rows {
            let latency = match &t.latency_ms {
                Some(l) => format!(
                    "{:>10.3}{:>10.3}{:>10.3}{:>10.3}",
                    l.p50, l.p90, l.p99, l.max
                ),
                None => format!("{:>10}{:>10}{:>10}{:>10}", "-", "-", "-", "-"),
            };
            writeln!(
                f,
                "{name:<11}{:>9}{:>9}{:>6}{:>7}{:>9}{:>11}{latency}",
                t.requests, t.ok, t.lost, t.wrong, t.retries, t.cache_hits,
            )?;
        }
        let answers: Vec<String> = self
            .answers
            .iter()
            .map(|(how, n)| format!("{how} {n}"))
            .collect();
        writeln!(f, "answers: {}", answers.join(", "))?;
        if self.not_sent > 0 {
            writeln!(
                f,
                "not sent: {} (the --duration cap ended the run)",
                self.not_sent
            )?;
        }
        writeln!(
            f,
            "wall {:.3} s, throughput {:.1} requests/s (latency: first try to answer, retry waits included)",
            self.wall_s, self.throughput_rps
        )?;
        for failure in &self.failures {
            writeln!(f, "  {failure}")?;
        }
        if self.passed {
            writeln!(f, "PASS: 0 lost, 0 wrong")
        } else {
            writeln!(f, "FAIL: {} lost, {} wrong", self.lost, self.wrong)
        }
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

    #[test]
    fn every_malformed_request_is_refused_by_the_wire_checks() {
        let board = Board::parse("8 6 7 2 5 4 3 0 1", None).unwrap();
        for m in Malformed::ALL {
            let r = m.spoil(&board);
            let board = npuzzle_proto::board_from_wire(r.board.as_ref());
            let refused = match board {
                Err(_) => true,
                Ok(b) => {
                    npuzzle_proto::goal_from_wire(r.goal.as_ref(), b.shape()).is_err()
                        || npuzzle_proto::heuristic_from_wire(r.heuristic).is_err()
                }
            };
            assert!(refused, "{m:?} passes the wire checks");
        }
    }

    #[test]
    fn swapping_two_tiles_makes_a_board_unsolvable() {
        let goal = Goal::blank_last(Shape::new(4, 4).unwrap());
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..100 {
            let board = random_board(&goal, Generate::Uniform, &mut rng);
            assert_eq!(goal.can_reach(&swapped(&board, &mut rng)), Ok(false));
        }
    }

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
