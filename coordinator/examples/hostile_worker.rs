//! A scriptable hostile worker, for measuring how the coordinator holds up (bench/hostile.sh).
//!
//! `cargo run --release -p npuzzle-coordinator --example hostile_worker -- \
//!     --coordinator http://127.0.0.1:50051 --attack budget-storm`
//!
//! Prints one line per second: what it sent, what it received, the joins accepted and the
//! refusals and stream closes, by gRPC status code.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Parser, ValueEnum};
use npuzzle_proto::v1;
use npuzzle_proto::v1::cluster_client::ClusterClient;
use npuzzle_proto::{board_from_wire, goal_from_wire, moves_to_wire, pattern_database_to_wire};
use npuzzle_solver::{HeuristicKind, Move, Partition, Shape, Solver};
use tokio::sync::mpsc::UnboundedSender;
use tonic::transport::{Channel, Endpoint};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Attack {
    /// Answer every assignment with BUDGET_EXCEEDED or SPLIT (see --variant), at once.
    BudgetStorm,
    /// EXHAUSTED with next_bound = 1,000,000.
    InflateBound,
    /// EXHAUSTED with next_bound = bound + 20.
    InflateBoundSmall,
    /// EXHAUSTED with next_bound = bound (not above it).
    FallingBound,
    /// EXHAUSTED with next_bound = 300.
    HugeBound,
    /// --count connections, each claiming 1,000,000 slots; take assignments, heartbeat, never
    /// answer.
    Slots,
    /// Hellos of about 1 MB (100k invalid pattern databases, a 64 KiB name), rejoining for
    /// --seconds.
    HelloFlood,
    /// Answer every unit FAILED (or what --variant says).
    Bounce,
    /// Heartbeat every second, never answer.
    Hold,
    /// Claim 4x4 pattern databases, answer UNSUPPORTED, leave and rejoin at once, in a loop.
    UnsupportedStorm,
    /// Unsolicited results (random job ids, expanded = u64::MAX), --rate per second.
    Counters,
    /// --count Join streams that never send hello.
    SilentJoin,
    /// --count TCP connections that send nothing.
    IdleTcp,
}

#[derive(Parser)]
#[command(
    name = "hostile_worker",
    about = "A hostile npuzzle worker, for benchmarks"
)]
struct Args {
    /// The coordinator's URL.
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    coordinator: String,
    #[arg(long, value_enum)]
    attack: Attack,
    /// Connections (slots, silent-join, idle-tcp).
    #[arg(long, default_value_t = 8)]
    count: usize,
    /// The worker's name in its hello.
    #[arg(long, default_value = "hostile")]
    name: String,
    /// Slots claimed in the hello (except `slots`, which claims 1,000,000).
    #[arg(long, default_value_t = 4)]
    slots: u32,
    /// budget-storm: budget | split (every node 3 moves below the unit's root, whatever its f) |
    /// split-legal (only those with f within the bound) | split-dup (1024 copies of the root);
    /// bounce: failed | cancelled | unsupported | garbage (FOUND with moves "XYZ").
    #[arg(long, default_value = "")]
    variant: String,
    /// How long the attack runs (hello-flood, counters; the others until killed or for this
    /// long when given).
    #[arg(long)]
    seconds: Option<f64>,
    /// counters: results per second.
    #[arg(long, default_value_t = 20_000)]
    rate: u64,
}

/// Counters, printed once a second.
#[derive(Default)]
struct Tally {
    counts: Mutex<BTreeMap<String, u64>>,
    sent: AtomicU64,
    assigned: AtomicU64,
}

impl Tally {
    fn add(&self, what: impl Into<String>) {
        *self.counts.lock().unwrap().entry(what.into()).or_default() += 1;
    }

    fn line(&self, t: f64) -> String {
        let counts = self.counts.lock().unwrap();
        let rest: Vec<String> = counts.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!(
            "t={t:.0}s sent={} assignments={} {}",
            self.sent.load(Ordering::Relaxed),
            self.assigned.load(Ordering::Relaxed),
            rest.join(" ")
        )
    }
}

type Outbound = UnboundedSender<v1::WorkerMessage>;
type Inbound = tonic::Streaming<v1::CoordinatorMessage>;

struct Ctx {
    args: Args,
    channel: Channel,
    tally: Tally,
}

fn hello(name: &str, slots: u32) -> v1::Hello {
    v1::Hello {
        worker_id: name.into(),
        slots,
        version: "hostile".into(),
        heuristics: vec![
            v1::Heuristic::Manhattan as i32,
            v1::Heuristic::LinearConflict as i32,
        ],
        pattern_databases: vec![],
        prefetch: false,
    }
}

fn msg_result(r: v1::UnitResult) -> v1::WorkerMessage {
    v1::WorkerMessage {
        message: Some(v1::worker_message::Message::Result(r)),
    }
}

fn msg_heartbeat() -> v1::WorkerMessage {
    v1::WorkerMessage {
        message: Some(v1::worker_message::Message::Heartbeat(v1::Heartbeat {
            busy_slots: 0,
        })),
    }
}

impl Ctx {
    /// Opens a Join stream with `hello`; counts the join or the refusal.
    async fn join(&self, hello: v1::Hello) -> Option<(Outbound, Inbound)> {
        let mut client = ClusterClient::new(self.channel.clone())
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tx.send(v1::WorkerMessage {
            message: Some(v1::worker_message::Message::Hello(hello)),
        })
        .ok()?;
        self.tally.sent.fetch_add(1, Ordering::Relaxed);
        match client
            .join(tokio_stream::wrappers::UnboundedReceiverStream::new(rx))
            .await
        {
            Ok(inbound) => {
                self.tally.add("joins");
                Some((tx, inbound.into_inner()))
            }
            Err(status) => {
                self.tally.add(format!("refused:{:?}", status.code()));
                if self.tally.counts.lock().unwrap().len() < 64 {
                    self.tally.add(format!(
                        "refusal-msg:[{}]",
                        status.message().chars().take(60).collect::<String>()
                    ));
                }
                None
            }
        }
    }

    fn send(&self, tx: &Outbound, m: v1::WorkerMessage) {
        if tx.send(m).is_ok() {
            self.tally.sent.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The answer of a per-assignment attack, or None to stay silent.
    fn answer(&self, a: &v1::Assignment) -> Option<v1::UnitResult> {
        let base = v1::UnitResult {
            job: a.job,
            epoch: a.epoch,
            unit: a.unit,
            expanded: 1,
            ..Default::default()
        };
        let exhausted = |next_bound: u32| v1::UnitResult {
            status: v1::UnitStatus::Exhausted as i32,
            next_bound,
            ..base.clone()
        };
        Some(match self.args.attack {
            Attack::BudgetStorm => match self.args.variant.as_str() {
                "split" | "split-legal" | "split-dup" => {
                    let (pieces, next_bound) = match self.args.variant.as_str() {
                        "split-dup" => (
                            vec![
                                v1::Piece {
                                    moves: String::new(),
                                    f: a.bound,
                                };
                                4 * npuzzle_solver::MAX_DEPTH
                            ],
                            0,
                        ),
                        "split-legal" => {
                            // What an honest worker stopped at once would hand back: the
                            // pieces within the bound; the least f above it as next bound.
                            let all = frontier(a);
                            let next = all
                                .iter()
                                .map(|p| p.f)
                                .filter(|&f| f > a.bound)
                                .min()
                                .unwrap_or(0);
                            (all.into_iter().filter(|p| p.f <= a.bound).collect(), next)
                        }
                        _ => (frontier(a), 0),
                    };
                    v1::UnitResult {
                        status: v1::UnitStatus::Split as i32,
                        bound: a.bound,
                        next_bound,
                        pieces,
                        ..base
                    }
                }
                _ => v1::UnitResult {
                    status: v1::UnitStatus::BudgetExceeded as i32,
                    ..base
                },
            },
            Attack::InflateBound => exhausted(1_000_000),
            Attack::InflateBoundSmall => exhausted(a.bound + 20),
            Attack::FallingBound => exhausted(a.bound),
            Attack::HugeBound => exhausted(300),
            Attack::Bounce => match self.args.variant.as_str() {
                "cancelled" => v1::UnitResult {
                    status: v1::UnitStatus::Cancelled as i32,
                    ..base
                },
                "unsupported" => v1::UnitResult {
                    status: v1::UnitStatus::Unsupported as i32,
                    error: "no tables".into(),
                    ..base
                },
                "garbage" => v1::UnitResult {
                    status: v1::UnitStatus::Found as i32,
                    moves: "XYZ".into(),
                    ..base
                },
                _ => v1::UnitResult {
                    status: v1::UnitStatus::Failed as i32,
                    error: "hostile".into(),
                    ..base
                },
            },
            Attack::UnsupportedStorm => v1::UnitResult {
                status: v1::UnitStatus::Unsupported as i32,
                error: "no tables after all".into(),
                ..base
            },
            _ => return None,
        })
    }

    /// One worker session: join, answer assignments per the attack, until the stream closes.
    /// Returns whether it joined.
    async fn session(&self, hello: v1::Hello, heartbeat: bool) -> bool {
        let Some((tx, mut inbound)) = self.join(hello).await else {
            return false;
        };
        let beat = heartbeat.then(|| {
            let tx = tx.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    if tx.send(msg_heartbeat()).is_err() {
                        return;
                    }
                }
            })
        });
        loop {
            match inbound.message().await {
                Ok(Some(v1::CoordinatorMessage {
                    message: Some(v1::coordinator_message::Message::Assign(a)),
                })) => {
                    self.tally.assigned.fetch_add(1, Ordering::Relaxed);
                    if a.iterate {
                        self.tally.add("iterate-assignments");
                    }
                    if let Some(r) = self.answer(&a) {
                        self.send(&tx, msg_result(r));
                        if self.args.attack == Attack::UnsupportedStorm {
                            // Leave at once (after the answer is flushed) and rejoin.
                            tokio::time::sleep(Duration::from_millis(5)).await;
                            self.tally.add("left");
                            break;
                        }
                    }
                }
                Ok(Some(v1::CoordinatorMessage {
                    message: Some(v1::coordinator_message::Message::Cancel(_)),
                })) => self.tally.add("cancels-received"),
                Ok(Some(v1::CoordinatorMessage {
                    message: Some(v1::coordinator_message::Message::YieldUnit(_)),
                })) => self.tally.add("yields-received"),
                Ok(Some(_)) => {}
                Ok(None) => {
                    self.tally.add("closed:ok");
                    break;
                }
                Err(status) => {
                    self.tally.add(format!("closed:{:?}", status.code()));
                    break;
                }
            }
        }
        if let Some(b) = beat {
            b.abort();
        }
        true
    }
}

/// A legal split of the whole unit: every node at the deepest level (at most 3 below the root)
/// whose count fits the coordinator's limit, in depth-first order, each with its g + h (linear
/// conflict). The unit's subtree below that level is covered exactly once; nothing was searched.
fn frontier(a: &v1::Assignment) -> Vec<v1::Piece> {
    let Ok(board) = board_from_wire(a.board.as_ref()) else {
        return vec![];
    };
    let Ok(goal) = goal_from_wire(a.goal.as_ref(), board.shape()) else {
        return vec![];
    };
    let Ok(solver) = Solver::new(goal, HeuristicKind::LinearConflict) else {
        return vec![];
    };
    let last = a.last_move.chars().next().and_then(Move::from_letter);
    let mut level: Vec<(Vec<Move>, Option<Move>)> = vec![(vec![], last)];
    for _ in 0..3 {
        let mut next = Vec::new();
        for (path, last) in &level {
            for m in Move::ALL {
                if Some(m.opposite()) == *last {
                    continue;
                }
                let mut p = path.clone();
                p.push(m);
                if board.apply(&p).is_ok() {
                    next.push((p, Some(m)));
                }
            }
        }
        if next.len() > 4 * npuzzle_solver::MAX_DEPTH {
            break;
        }
        level = next;
    }
    level
        .into_iter()
        .map(|(p, _)| {
            let h = board
                .apply(&p)
                .ok()
                .and_then(|b| solver.estimate(&b).ok())
                .unwrap_or(0);
            v1::Piece {
                moves: moves_to_wire(&p),
                f: a.g + p.len() as u32 + h,
            }
        })
        .collect()
}

/// A small xorshift, for job ids.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

async fn attack(ctx: Arc<Ctx>) -> anyhow::Result<()> {
    let args = &ctx.args;
    let deadline = args
        .seconds
        .map(|s| Instant::now() + Duration::from_secs_f64(s));
    let running = || deadline.is_none_or(|d| Instant::now() < d);
    match args.attack {
        Attack::BudgetStorm
        | Attack::InflateBound
        | Attack::InflateBoundSmall
        | Attack::FallingBound
        | Attack::HugeBound
        | Attack::Bounce
        | Attack::Hold => {
            let heartbeat = matches!(args.attack, Attack::Hold);
            while running() {
                ctx.session(hello(&args.name, args.slots), heartbeat).await;
                // Dropped or refused: try again shortly (a refusal is counted by its code).
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        Attack::UnsupportedStorm => {
            let shape = Shape::new(4, 4)?;
            let db = pattern_database_to_wire(&Partition::named(shape, "7-8")?);
            while running() {
                let mut h = hello(&args.name, args.slots);
                h.heuristics.push(v1::Heuristic::Pdb as i32);
                h.pattern_databases = vec![db.clone()];
                if !ctx.session(h, true).await {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        Attack::Slots => {
            let mut tasks = Vec::new();
            for i in 0..args.count {
                let ctx = Arc::clone(&ctx);
                tasks.push(tokio::spawn(async move {
                    let name = format!("{}-{i}", ctx.args.name);
                    loop {
                        ctx.session(hello(&name, 1_000_000), true).await;
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                }));
            }
            match deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending().await,
            }
        }
        Attack::HelloFlood => {
            let deadline = deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(5));
            let big = v1::Hello {
                worker_id: "W".repeat(64 * 1024),
                pattern_databases: (0..100_000)
                    .map(|i| v1::PatternDatabase {
                        width: 99,
                        height: 99,
                        partition: format!("bad-{i}"),
                    })
                    .collect(),
                ..hello(&args.name, args.slots)
            };
            ctx.tally.add(format!(
                "hello-bytes-{}",
                prost::Message::encoded_len(&v1::WorkerMessage {
                    message: Some(v1::worker_message::Message::Hello(big.clone())),
                })
            ));
            while Instant::now() < deadline {
                if let Some((tx, inbound)) = ctx.join(big.clone()).await {
                    drop(tx);
                    drop(inbound);
                }
            }
        }
        Attack::Counters => {
            let Some((tx, mut inbound)) = ctx.join(hello(&args.name, args.slots)).await else {
                anyhow::bail!("not joined");
            };
            let ctx2 = Arc::clone(&ctx);
            tokio::spawn(async move {
                loop {
                    match inbound.message().await {
                        Ok(Some(_)) => {
                            ctx2.tally.assigned.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(None) => {
                            ctx2.tally.add("closed:ok");
                            return;
                        }
                        Err(status) => {
                            ctx2.tally.add(format!("closed:{:?}", status.code()));
                            return;
                        }
                    }
                }
            });
            let mut seed = 0x9E37_79B9_7F4A_7C15u64;
            let per_tick = (args.rate / 100).max(1);
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            while running() {
                tick.tick().await;
                for _ in 0..per_tick {
                    let r = v1::UnitResult {
                        job: xorshift(&mut seed),
                        epoch: xorshift(&mut seed) as u32,
                        unit: xorshift(&mut seed) as u32,
                        status: v1::UnitStatus::Exhausted as i32,
                        next_bound: 80,
                        expanded: u64::MAX,
                        generated: u64::MAX,
                        ..Default::default()
                    };
                    if tx.send(msg_result(r)).is_err() {
                        ctx.tally.add("send-failed");
                        return Ok(());
                    }
                    ctx.tally.sent.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Attack::SilentJoin => {
            let started = Instant::now();
            let mut tasks = Vec::new();
            for _ in 0..args.count {
                let ctx = Arc::clone(&ctx);
                tasks.push(tokio::spawn(async move {
                    let mut client = ClusterClient::new(ctx.channel.clone());
                    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<v1::WorkerMessage>();
                    let r = client
                        .join(tokio_stream::wrappers::UnboundedReceiverStream::new(rx))
                        .await;
                    drop(tx);
                    let code = match r {
                        Ok(_) => "accepted".to_string(),
                        Err(s) => format!("{:?}", s.code()),
                    };
                    ctx.tally.add(format!(
                        "closed:{code}-after-{:.1}s",
                        started.elapsed().as_secs_f64()
                    ));
                }));
            }
            for t in tasks {
                let _ = t.await;
            }
        }
        Attack::IdleTcp => {
            use tokio::io::AsyncReadExt;
            let address = args
                .coordinator
                .trim_start_matches("http://")
                .trim_start_matches("https://")
                .to_string();
            let started = Instant::now();
            let mut tasks = Vec::new();
            for _ in 0..args.count {
                let ctx = Arc::clone(&ctx);
                let address = address.clone();
                tasks.push(tokio::spawn(async move {
                    let Ok(mut s) = tokio::net::TcpStream::connect(&address).await else {
                        ctx.tally.add("connect-failed");
                        return;
                    };
                    ctx.tally.add("connected");
                    let mut buf = [0u8; 4096];
                    let mut got = 0usize;
                    let how = loop {
                        match s.read(&mut buf).await {
                            Ok(0) => break "eof",
                            Ok(n) => got += n,
                            Err(_) => break "error",
                        }
                    };
                    ctx.tally.add(format!(
                        "closed:{how}-after-{:.0}s-({got}-bytes-read)",
                        started.elapsed().as_secs_f64()
                    ));
                }));
            }
            for t in tasks {
                let _ = t.await;
            }
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let channel = Endpoint::from_shared(args.coordinator.clone())?
        .connect_timeout(Duration::from_secs(5))
        .connect_lazy();
    let ctx = Arc::new(Ctx {
        args,
        channel,
        tally: Tally::default(),
    });
    let started = Instant::now();
    let reporter = {
        let ctx = Arc::clone(&ctx);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.tick().await;
            loop {
                tick.tick().await;
                println!("{}", ctx.tally.line(started.elapsed().as_secs_f64()));
            }
        })
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let result = tokio::select! {
        r = attack(Arc::clone(&ctx)) => r.context("attack"),
        _ = term.recv() => Ok(()),
        _ = tokio::signal::ctrl_c() => Ok(()),
    };
    reporter.abort();
    println!("final {}", ctx.tally.line(started.elapsed().as_secs_f64()));
    result
}
