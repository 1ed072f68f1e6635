//! `npuzzle`: solve sliding-tile puzzles optimally from the command line.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use npuzzle_client::batch::{self, BatchOptions, OutputFormat, Sink};
use npuzzle_client::engine::{Engine, HeuristicChoice, Settings, Status};
use npuzzle_client::input::Format;
use npuzzle_client::{bench, ops, remote};
use npuzzle_client::{sink, tools};
use npuzzle_proto::security::{ClientSecurity, PemCertificates, Token};
use npuzzle_solver::{GoalSpec, HeuristicKind, Shape};
use npuzzle_telemetry::LogFormat;

/// Optimal solutions for sliding-tile puzzles (8-, 15-, 24-puzzle, rectangles up to 5x5).
///
/// Moves name the direction the BLANK moves: U, D, L, R. Every option can also be set by the
/// environment variable named in its help (e.g. NPUZZLE_COORDINATOR).
#[derive(Parser)]
#[command(name = "npuzzle", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log lines (on stderr) as `text` or `json`. Logs are off unless RUST_LOG is set (e.g.
    /// RUST_LOG=info).
    #[arg(
        long,
        global = true,
        env = "NPUZZLE_LOG_FORMAT",
        default_value = "text",
        value_name = "text|json"
    )]
    log_format: LogFormat,
}

#[derive(Subcommand)]
enum Command {
    /// Solve one board and print its moves (or `unsolvable`).
    Solve(SolveArgs),
    /// Solve a file of boards; answers come out in input order.
    Batch(BatchArgs),
    /// Replay moves on a board: say which move is illegal, or where the path ends.
    Verify(VerifyArgs),
    /// Print random solvable boards, one per line (reproducible by --seed).
    Gen(GenArgs),
    /// Benchmark: nodes, time and node rate per instance for each heuristic (one thread).
    Bench(BenchArgs),
    /// Record traces of searches (per bound, the nodes of every subtree at a depth) for
    /// `simulate`.
    Trace(TraceArgs),
    /// Predict how the cluster scales: recorded traces through the real scheduler with
    /// simulated workers, for each slot count (speed-up, efficiency, the scheduler's own cost).
    Simulate(SimulateArgs),
    /// Run a whole cluster (a coordinator and N workers) in this process, for trials.
    Cluster(ClusterArgs),
    /// Benchmark the cluster: time, search overhead, balance, cancel latency, round trips.
    ClusterBench(ClusterBenchArgs),
    /// Load test: many concurrent clients mixing cached, new, invalid and unsolvable boards;
    /// every answer checked (paths replayed, lengths against the optimum). Exit status 1 when
    /// any answer is lost or wrong.
    Load(LoadArgs),
    /// Pattern databases: build them, or list what is on disk.
    #[command(subcommand)]
    Pdb(PdbCommand),
    /// Show a coordinator's state: workers, search threads, queued work, cache.
    Stats(StatsArgs),
    /// Ask a coordinator whether it is serving (grpc.health.v1). Exit status: 0 SERVING,
    /// 1 NOT_SERVING or unknown, 2 unreachable; usable as a container health probe.
    Health(HealthArgs),
}

/// What an environment variable may say for a yes/no flag: true/false, yes/no, on/off, 1/0.
fn boolish() -> clap::builder::BoolishValueParser {
    clap::builder::BoolishValueParser::new()
}

/// Default coordinator of `stats` and `health`.
const LOCAL_COORDINATOR: &str = "http://127.0.0.1:50051";

/// The client token a coordinator may require (its --client-token).
#[derive(Args, Clone, Default)]
struct TokenOptions {
    /// The client token the coordinator requires (its --client-token), sent as `authorization:
    /// Bearer TOKEN` with every call to --coordinator. Prefer --token-file: other processes of
    /// the same user can read the environment and the command line.
    #[arg(
        long,
        env = "NPUZZLE_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    token: Option<String>,
    /// The client token, read from FILE (trailing line breaks dropped).
    #[arg(long, env = "NPUZZLE_TOKEN_FILE", value_name = "FILE")]
    token_file: Option<PathBuf>,
}

/// How an https:// coordinator's certificate is verified.
#[derive(Args, Clone, Default)]
struct TlsOptions {
    /// For an https:// coordinator: the CA certificate (PEM) that must have signed its
    /// certificate. Without it, the Mozilla root CAs are trusted.
    #[arg(long, env = "NPUZZLE_TLS_CA", value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// For an https:// coordinator: the name its certificate must carry, when it is not the
    /// URL's host (e.g. when connecting by IP address).
    #[arg(long, env = "NPUZZLE_TLS_DOMAIN", value_name = "NAME")]
    tls_domain: Option<String>,
}

/// The token and TLS settings, read (token and CA files) and checked.
fn security(token: &TokenOptions, tls: &TlsOptions) -> anyhow::Result<ClientSecurity> {
    Ok(ClientSecurity {
        token: Token::from_flags(token.token.clone(), token.token_file.as_deref(), "--token")?,
        tls_ca: tls
            .tls_ca
            .as_deref()
            .map(PemCertificates::read)
            .transpose()?,
        tls_domain: tls.tls_domain.clone(),
    })
}

#[derive(Args)]
struct StatsArgs {
    /// The coordinator's URL.
    #[arg(long, env = "NPUZZLE_COORDINATOR", default_value = LOCAL_COORDINATOR, value_name = "URL")]
    coordinator: String,
    /// Print one JSON object instead of text.
    #[arg(long, env = "NPUZZLE_JSON", value_parser = boolish())]
    json: bool,
    /// Give up after this many milliseconds (connecting and asking).
    #[arg(
        long,
        env = "NPUZZLE_TIMEOUT_MS",
        default_value_t = 5000,
        value_name = "N"
    )]
    timeout_ms: u64,
    #[command(flatten)]
    token: TokenOptions,
    #[command(flatten)]
    tls: TlsOptions,
}

#[derive(Args)]
struct HealthArgs {
    /// The coordinator's URL.
    #[arg(long, env = "NPUZZLE_COORDINATOR", default_value = LOCAL_COORDINATOR, value_name = "URL")]
    coordinator: String,
    /// The service to ask about: empty for the server as a whole (the default),
    /// npuzzle.v1.Solver or npuzzle.v1.Cluster. All three say SERVING only while a worker is
    /// connected and the coordinator is not shutting down.
    #[arg(
        long,
        env = "NPUZZLE_HEALTH_SERVICE",
        default_value = "",
        value_name = "NAME"
    )]
    service: String,
    /// Give up after this many milliseconds (connecting and asking): exit status 2.
    #[arg(
        long,
        env = "NPUZZLE_TIMEOUT_MS",
        default_value_t = 2000,
        value_name = "N"
    )]
    timeout_ms: u64,
    // grpc.health.v1 needs no token: TLS settings only.
    #[command(flatten)]
    tls: TlsOptions,
}

#[derive(Subcommand)]
enum PdbCommand {
    /// Build (or rebuild) a partition's tables into the table directory.
    Build {
        /// Board size: 4x4 (partitions 5-5-5, 6-6-3, 7-8), 5x5 (6-6-6-6), 3x3 (4-4), 2x4 / 4x2 (3-4).
        #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
        size: Shape,
        /// How the tiles are split into patterns: 7-8 (strongest, 577 MB, about 16 minutes),
        /// 6-6-3 (11.5 MB, about 10 s) or 5-5-5 (a second) for 4x4; 6-6-6-6 for 5x5; 4-4 for
        /// 3x3; 3-4 for 2x4 and 4x2.
        #[arg(long, env = "NPUZZLE_PARTITION")]
        partition: String,
        /// Directory of pattern databases (default: $NPUZZLE_PDB_DIR, else the user cache).
        #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
        pdb_dir: Option<PathBuf>,
    },
    /// List the tables present in the table directory and whether they verify.
    List {
        /// Directory of pattern databases (default: $NPUZZLE_PDB_DIR, else the user cache).
        #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
        pdb_dir: Option<PathBuf>,
    },
}

#[derive(Args)]
struct ClusterBenchArgs {
    /// Instances, as for `bench`.
    file: PathBuf,
    /// Goal: blank-last, blank-first (Korf's files use it), or the goal's tiles.
    #[arg(long, env = "NPUZZLE_GOAL", default_value = "blank-last")]
    goal: GoalSpec,
    /// The workers' heuristic: md (Manhattan), lc (linear conflict) or pdb (pattern databases,
    /// from --pdb-dir: the embedded workers load them, and so does the serial comparison), the
    /// one the serial comparison runs too.
    #[arg(long, env = "NPUZZLE_BENCH_HEURISTIC", default_value = "lc")]
    heuristic: HeuristicKind,
    /// Directory of pattern databases, for --heuristic pdb (default: $NPUZZLE_PDB_DIR, else the
    /// user cache).
    #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
    pdb_dir: Option<PathBuf>,
    /// Board size as WxH, if not inferred.
    #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
    size: Option<Shape>,
    /// Only these ids: e.g. `1-15` or `2,5,9`.
    #[arg(long, env = "NPUZZLE_BENCH_IDS")]
    ids: Option<String>,
    /// A running coordinator; without it, an embedded cluster is started.
    #[arg(long, env = "NPUZZLE_COORDINATOR", value_name = "URL")]
    coordinator: Option<String>,
    /// Embedded cluster: in-process workers.
    #[arg(long, env = "NPUZZLE_WORKERS", default_value_t = 1)]
    workers: usize,
    /// Embedded cluster: search threads per worker (default: the cores shared among them).
    #[arg(long, env = "NPUZZLE_THREADS")]
    threads: Option<usize>,
    /// Also search each instance serially, for the overhead and speed-up ratios.
    #[arg(long, env = "NPUZZLE_BENCH_COMPARE_SERIAL", value_parser = boolish())]
    compare_serial: bool,
    /// 8-puzzle and cache-hit round trips to time.
    #[arg(long, env = "NPUZZLE_BENCH_LATENCY_SAMPLES", default_value_t = 1000)]
    latency_samples: usize,
    #[command(flatten)]
    token: TokenOptions,
    #[command(flatten)]
    tls: TlsOptions,
}

#[derive(Args)]
struct LoadArgs {
    /// A running coordinator; without it, an embedded cluster (a coordinator and --workers
    /// workers, in this process, on loopback) is started.
    #[arg(long, env = "NPUZZLE_COORDINATOR", value_name = "URL")]
    coordinator: Option<String>,
    #[command(flatten)]
    token: TokenOptions,
    #[command(flatten)]
    tls: TlsOptions,
    /// Embedded cluster: in-process workers (they load no pattern databases).
    #[arg(long, env = "NPUZZLE_WORKERS", default_value_t = 1)]
    workers: usize,
    /// Embedded cluster: search threads per worker (default: the cores shared among them).
    #[arg(long, env = "NPUZZLE_THREADS")]
    threads: Option<usize>,
    /// Embedded cluster: the coordinator's limit on requests needing a search (past it,
    /// RESOURCE_EXHAUSTED with a retry-after-ms hint, which the clients wait out and retry).
    #[arg(long, env = "NPUZZLE_MAX_SEARCHES", value_name = "N")]
    max_searches: Option<usize>,
    /// Concurrent clients, each sending its next request when it has its answer.
    #[arg(long, env = "NPUZZLE_LOAD_CLIENTS", default_value_t = 64)]
    clients: usize,
    /// gRPC connections the clients share (0: one per client).
    #[arg(long, env = "NPUZZLE_LOAD_CONNECTIONS", default_value_t = 0)]
    connections: usize,
    /// Requests in the measured run (after the warm-up).
    #[arg(long, env = "NPUZZLE_LOAD_REQUESTS", default_value_t = 2000)]
    requests: usize,
    /// Start no request after this many seconds (the rest is reported as not sent).
    #[arg(
        long,
        env = "NPUZZLE_LOAD_DURATION",
        default_value_t = 60.0,
        value_name = "SECS"
    )]
    duration: f64,
    /// Distinct boards sent once before the measured run; the `cached` kind repeats them.
    #[arg(long, env = "NPUZZLE_LOAD_WARM", default_value_t = 200)]
    warm: usize,
    /// Kinds of request and their weights: cached (warm-up boards again), new (boards not sent
    /// before), invalid (malformed requests), unsolvable (two tiles swapped).
    #[arg(long, env = "NPUZZLE_LOAD_MIX", default_value = npuzzle_client::load::DEFAULT_MIX)]
    mix: npuzzle_client::load::Mix,
    /// The random seed of the workload.
    #[arg(long, env = "NPUZZLE_LOAD_SEED", default_value_t = 1)]
    seed: u64,
    /// Board size as WxH; above 9 cells, --walk is needed (each optimum is checked here).
    #[arg(long, env = "NPUZZLE_SIZE", default_value = "3x3", value_name = "WxH")]
    size: Shape,
    /// Boards are random walks of K moves from the goal instead of uniformly random.
    #[arg(long, env = "NPUZZLE_LOAD_WALK", value_name = "K")]
    walk: Option<usize>,
    /// A request with no answer this long after its first try (retries included) is lost.
    #[arg(long, env = "NPUZZLE_LOAD_TIMEOUT_MS", default_value_t = 30_000)]
    timeout_ms: u64,
    /// The longest wait before a retry after RESOURCE_EXHAUSTED, whatever the hint says.
    #[arg(long, env = "NPUZZLE_LOAD_MAX_RETRY_WAIT_MS", default_value_t = 1000)]
    max_retry_wait_ms: u64,
    /// Print one JSON object instead of text.
    #[arg(long, env = "NPUZZLE_JSON", value_parser = boolish())]
    json: bool,
}

#[derive(Args)]
struct ClusterArgs {
    /// Address for clients and external workers.
    #[arg(long, env = "NPUZZLE_LISTEN", default_value = "127.0.0.1:50051")]
    listen: String,
    /// In-process workers.
    #[arg(long, env = "NPUZZLE_WORKERS", default_value_t = 1)]
    workers: usize,
    /// Search threads per worker (default: the cores shared among the workers).
    #[arg(long, env = "NPUZZLE_THREADS")]
    threads: Option<usize>,
    /// Directory of pattern databases the workers load and serve (default: $NPUZZLE_PDB_DIR,
    /// else the user cache).
    #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
    pdb_dir: Option<PathBuf>,
}

/// Options shared by every command that solves boards.
#[derive(Args, Clone)]
struct BoardOptions {
    /// Board size as WxH (e.g. 3x2); 4, 9, 16 and 25 tiles infer a square.
    #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
    size: Option<Shape>,
    /// Goal: blank-last (1 2 … 0), blank-first (0 1 2 …, Korf's), or the goal's tiles.
    #[arg(
        long,
        env = "NPUZZLE_GOAL",
        default_value = "blank-last",
        value_name = "GOAL"
    )]
    goal: GoalSpec,
    /// Heuristic: auto (the strongest available for the board), md (Manhattan), lc (Manhattan
    /// and linear conflict), exact (a table of every state; up to 9 cells) or pdb (pattern
    /// databases, built with `npuzzle pdb build`).
    #[arg(
        long,
        env = "NPUZZLE_HEURISTIC",
        default_value = "auto",
        value_name = "auto|md|lc|exact|pdb"
    )]
    heuristic: HeuristicChoice,
    /// Directory of pattern databases.
    #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
    pdb_dir: Option<PathBuf>,
    /// Search in this process, without gRPC (the baseline engine); not with --coordinator.
    #[arg(long, env = "NPUZZLE_SERIAL", value_parser = boolish())]
    serial: bool,
    /// Solve through this coordinator (e.g. http://10.0.0.1:50051). Without it (and without
    /// --serial), npuzzle starts an embedded cluster: a coordinator and a worker using every
    /// core, in this process, on loopback.
    #[arg(long, env = "NPUZZLE_COORDINATOR", value_name = "URL")]
    coordinator: Option<String>,
    #[command(flatten)]
    token: TokenOptions,
    #[command(flatten)]
    tls: TlsOptions,
}

#[derive(Args)]
struct VerifyArgs {
    /// The board, as for `solve`.
    board: String,
    /// The moves: letters U, D, L, R (the blank's direction), any case.
    moves: String,
    /// Board size as WxH, if not inferred.
    #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
    size: Option<Shape>,
    /// Goal: blank-last, blank-first, or the goal's tiles.
    #[arg(
        long,
        env = "NPUZZLE_GOAL",
        default_value = "blank-last",
        value_name = "GOAL"
    )]
    goal: GoalSpec,
}

#[derive(Args)]
struct GenArgs {
    /// Board size as WxH (e.g. 4x4).
    #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
    size: Shape,
    /// How many boards.
    #[arg(long, env = "NPUZZLE_GEN_COUNT", default_value_t = 10)]
    count: usize,
    /// The random seed: the same seed gives the same boards on every machine.
    #[arg(long, env = "NPUZZLE_GEN_SEED", default_value_t = 1)]
    seed: u64,
    /// Random walks of this many moves from the goal instead of uniformly random boards
    /// (easier boards, optimal length at most the walk's).
    #[arg(long, env = "NPUZZLE_GEN_WALK", value_name = "K")]
    walk: Option<usize>,
    /// Goal: blank-last, blank-first, or the goal's tiles.
    #[arg(
        long,
        env = "NPUZZLE_GOAL",
        default_value = "blank-last",
        value_name = "GOAL"
    )]
    goal: GoalSpec,
}

/// How long boards may take through a coordinator, and how long a busy or unreachable one is
/// waited for.
#[derive(Args)]
struct PatienceOptions {
    /// Each board's deadline, in seconds: past it the board is `failed` (reason `deadline`),
    /// with the lower bound proven so far. Not with --serial.
    #[arg(long, env = "NPUZZLE_TIMEOUT", value_name = "SECS")]
    timeout: Option<f64>,
    /// A coordinator at its limit of searches, unreachable or restarting is asked again, with
    /// backoff, for this many seconds; then the board is `failed`.
    #[arg(
        long,
        env = "NPUZZLE_RETRY_FOR",
        value_name = "SECS",
        default_value_t = 300.0
    )]
    retry_for: f64,
}

impl PatienceOptions {
    fn patience(&self, serial: bool) -> anyhow::Result<remote::Patience> {
        let seconds = |what: &str, s: f64| {
            std::time::Duration::try_from_secs_f64(s)
                .map_err(|_| anyhow::anyhow!("{what} {s}: expected seconds, 0 or more"))
        };
        if serial && self.timeout.is_some() {
            anyhow::bail!("--timeout needs a coordinator (or the embedded cluster), not --serial");
        }
        Ok(remote::Patience {
            retry_for: seconds("--retry-for", self.retry_for)?,
            timeout: self.timeout.map(|t| seconds("--timeout", t)).transpose()?,
        })
    }
}

#[derive(Args)]
struct SolveArgs {
    /// The board, row-major: tiles separated by spaces or commas; 0, x, X or _ is the blank.
    board: String,
    #[command(flatten)]
    options: BoardOptions,
    #[command(flatten)]
    patience: PatienceOptions,
    /// Print one JSON object instead of the moves.
    #[arg(long, env = "NPUZZLE_JSON", value_parser = boolish())]
    json: bool,
}

#[derive(Args)]
struct BatchArgs {
    /// Input file; `-` or nothing reads standard input.
    input: Option<PathBuf>,
    /// Input format: auto, lines, uva10181 or poj1077.
    #[arg(long, env = "NPUZZLE_BATCH_FORMAT", default_value = "auto")]
    format: Format,
    /// Output: text (the judge's format, one line per board), jsonl (one JSON object per
    /// board) or csv (a header, then one row per board).
    #[arg(long, env = "NPUZZLE_BATCH_OUTPUT", default_value = "text")]
    output: OutputFormat,
    /// Write the answers to FILE instead of standard output.
    #[arg(long, env = "NPUZZLE_BATCH_OUT", value_name = "FILE")]
    out: Option<PathBuf>,
    /// Continue an interrupted run: keep the answers already in --out FILE, skip those boards
    /// and append the rest (same input and --output as before).
    #[arg(long, env = "NPUZZLE_BATCH_RESUME", value_parser = boolish())]
    resume: bool,
    /// Boards in flight: solver threads with --serial (default: one per core), concurrent
    /// requests otherwise (default: four per core).
    #[arg(long, env = "NPUZZLE_JOBS", default_value_t = 0)]
    jobs: usize,
    #[command(flatten)]
    options: BoardOptions,
    #[command(flatten)]
    patience: PatienceOptions,
}

#[derive(Args)]
struct BenchArgs {
    /// Instances: one board per line, or `id optimal_length tiles…` lines (Korf's files).
    file: PathBuf,
    /// Goal: blank-last, blank-first (Korf's files use it), or the goal's tiles.
    #[arg(long, env = "NPUZZLE_GOAL", default_value = "blank-last")]
    goal: GoalSpec,
    /// Heuristics to run, comma-separated (md, lc, exact, pdb).
    #[arg(
        long,
        env = "NPUZZLE_BENCH_HEURISTICS",
        default_value = "md,lc",
        value_delimiter = ','
    )]
    heuristic: Vec<HeuristicKind>,
    /// Directory of pattern databases (for pdb).
    #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
    pdb_dir: Option<PathBuf>,
    /// Board size as WxH, if not inferred.
    #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
    size: Option<Shape>,
    /// Only these ids: e.g. `1-15` or `2,5,9`.
    #[arg(long, env = "NPUZZLE_BENCH_IDS")]
    ids: Option<String>,
    /// Stop each instance after this many seconds (reported, not counted as wrong).
    #[arg(long, env = "NPUZZLE_BENCH_TIME_LIMIT", value_name = "SECS")]
    time_limit: Option<f64>,
}

#[derive(Args)]
struct TraceArgs {
    /// Instances, as for `bench`.
    file: PathBuf,
    /// Goal: blank-last, blank-first (Korf's files use it), or the goal's tiles.
    #[arg(long, env = "NPUZZLE_GOAL", default_value = "blank-last")]
    goal: GoalSpec,
    /// The heuristic to search with (md, lc, exact or pdb).
    #[arg(long, env = "NPUZZLE_TRACE_HEURISTIC", default_value = "pdb")]
    heuristic: HeuristicKind,
    /// Directory of pattern databases (for pdb).
    #[arg(long, env = "NPUZZLE_PDB_DIR", value_name = "DIR")]
    pdb_dir: Option<PathBuf>,
    /// Board size as WxH, if not inferred.
    #[arg(long, env = "NPUZZLE_SIZE", value_name = "WxH")]
    size: Option<Shape>,
    /// Only these ids: e.g. `1-15` or `2,5,9`.
    #[arg(long, env = "NPUZZLE_TRACE_IDS")]
    ids: Option<String>,
    /// Depth of the subtrees recorded: the simulated workers' grain.
    #[arg(long, env = "NPUZZLE_TRACE_DEPTH", default_value_t = 10)]
    depth: u32,
    /// Write the traces here (one after another) instead of standard output.
    #[arg(long, env = "NPUZZLE_TRACE_OUT", value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct SimulateArgs {
    /// Trace files written by `npuzzle trace` (each may hold several traces: a batch, run in
    /// order).
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    /// Slot counts to simulate.
    #[arg(
        long,
        env = "NPUZZLE_SIM_SLOTS",
        default_value = "1,2,4,8,16,32,64,128,256,512,1024",
        value_delimiter = ','
    )]
    slots: Vec<usize>,
    /// Search threads per simulated worker.
    #[arg(long, env = "NPUZZLE_SIM_SLOTS_PER_WORKER", default_value_t = 1)]
    slots_per_worker: usize,
    /// One-way latency between the coordinator and a worker or client, in milliseconds.
    #[arg(long, env = "NPUZZLE_SIM_LATENCY_MS", default_value_t = 0.1)]
    latency_ms: f64,
    /// Nodes per second per slot (default: the rate each trace was recorded at).
    #[arg(long, env = "NPUZZLE_SIM_RATE")]
    rate: Option<f64>,
    /// Jobs the simulated client keeps in flight.
    #[arg(long, env = "NPUZZLE_SIM_JOBS_IN_FLIGHT", default_value_t = 1)]
    jobs_in_flight: usize,
    /// One JSON object per slot count.
    #[arg(long, env = "NPUZZLE_JSON", value_parser = boolish())]
    json: bool,
}

fn trace(args: TraceArgs) -> anyhow::Result<ExitCode> {
    let instances = load_instances(&args.file, args.size, args.ids.as_deref())?;
    let Some(first) = instances.first() else {
        anyhow::bail!("no instances selected");
    };
    let shape = first.board.shape();
    let goal = args.goal.resolve(shape)?;
    let (solver, name) = if args.heuristic == HeuristicKind::Pdb {
        let store = npuzzle_worker::tables::TableStore::new(args.pdb_dir.clone());
        let (partition, tables) = store.best_shared(shape)?;
        (
            npuzzle_solver::Solver::with_pdb(goal, tables)?,
            format!("pdb {}", partition.name),
        )
    } else {
        (
            npuzzle_solver::Solver::new(goal, args.heuristic)?,
            args.heuristic.to_string(),
        )
    };
    let traces =
        npuzzle_client::simulate::record(&instances, &solver, &name, args.depth, io::stderr())?;
    let text: String = traces.iter().map(|(_, t)| t.to_text()).collect();
    match &args.out {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

fn simulate(args: SimulateArgs) -> anyhow::Result<ExitCode> {
    let mut traces = Vec::new();
    for path in &args.traces {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        traces.extend(
            npuzzle_solver::Trace::parse_all(&text)
                .with_context(|| format!("cannot read {}", path.display()))?,
        );
    }
    // Each simulated slot costs memory; past this, a typo rather than a cluster.
    const MAX_SLOTS: usize = 1 << 16;
    if let Some(&bad) = args.slots.iter().find(|&&n| n == 0 || n > MAX_SLOTS) {
        anyhow::bail!("--slots: {bad} is not a slot count from 1 to {MAX_SLOTS}");
    }
    if !(args.latency_ms >= 0.0 && args.latency_ms.is_finite()) {
        anyhow::bail!("--latency-ms must be a number of milliseconds, 0 or more");
    }
    let config = npuzzle_coordinator::sim::SimConfig {
        slots_per_worker: args.slots_per_worker.max(1),
        latency: std::time::Duration::from_secs_f64(args.latency_ms / 1e3),
        rate: args.rate,
        jobs_in_flight: args.jobs_in_flight.max(1),
        ..npuzzle_coordinator::sim::SimConfig::default()
    };
    let rows = npuzzle_client::simulate::table(
        &traces,
        &args.slots,
        &config,
        args.json,
        io::stdout().lock(),
    )?;
    Ok(if rows.iter().any(|r| r.wrong > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn settings(o: &BoardOptions) -> Settings {
    Settings {
        shape: o.size,
        goal: o.goal.clone(),
        heuristic: o.heuristic,
        pdb_dir: o.pdb_dir.clone(),
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Runs `work` against the coordinator `options` names (with its token and TLS settings), or
/// against an embedded cluster (whose worker serves the pattern databases of
/// `settings.pdb_dir`).
fn with_coordinator<T>(
    options: &BoardOptions,
    settings: &Settings,
    shapes: Option<BTreeSet<Shape>>,
    work: impl AsyncFnOnce(remote::Coordinator) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    runtime()?.block_on(async {
        let (_embedded, url, security) = match &options.coordinator {
            Some(url) => (None, url.clone(), security(&options.token, &options.tls)?),
            None => {
                let cluster = remote::EmbeddedCluster::start(cores(), settings, shapes).await?;
                let url = cluster.url.clone();
                (Some(cluster), url, ClientSecurity::default())
            }
        };
        let client = remote::connect(&url, &security)
            .await
            .map_err(|e| cannot_reach(&url, &e))?;
        work(client).await
    })
}

/// The error of a failed connection, its causes on one line, each once (TLS failures included:
/// `invalid peer certificate: UnknownIssuer`).
fn cannot_reach(url: &str, error: &remote::ConnectError) -> anyhow::Error {
    anyhow::anyhow!(
        "cannot reach the coordinator at {url}: {}",
        ops::describe(error)
    )
}

/// `--serial` and `--coordinator` exclude each other. (Checked here rather than by clap, which
/// would also count `NPUZZLE_SERIAL=false` as `--serial`.)
fn check_engine(o: &BoardOptions) -> anyhow::Result<()> {
    if o.serial && o.coordinator.is_some() {
        anyhow::bail!(
            "--serial (NPUZZLE_SERIAL) and --coordinator (NPUZZLE_COORDINATOR) exclude each other"
        );
    }
    Ok(())
}

fn solve(args: SolveArgs) -> anyhow::Result<ExitCode> {
    check_engine(&args.options)?;
    let patience = args.patience.patience(args.options.serial)?;
    let settings = settings(&args.options);
    let record = if args.options.serial {
        Engine::new(settings).solve_text(0, &args.board, None)
    } else {
        let shape = npuzzle_solver::Board::parse(&args.board, settings.shape)
            .ok()
            .map(|b| BTreeSet::from([b.shape()]));
        with_coordinator(&args.options, &settings, shape, async |mut client| {
            let waiting = std::sync::atomic::AtomicUsize::new(0);
            Ok(remote::solve(
                &mut client,
                0,
                &args.board,
                None,
                &settings,
                patience,
                &waiting,
            )
            .await?)
        })?
    };
    let mut out = io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &record)?;
        writeln!(out)?;
    } else {
        match record.status {
            Status::Solved => writeln!(out, "{}", record.moves.as_deref().unwrap_or(""))?,
            Status::Unsolvable => writeln!(out, "unsolvable")?,
            Status::Invalid => {
                eprintln!(
                    "error: {}",
                    record.error.as_deref().unwrap_or("invalid board")
                );
            }
            Status::Failed => eprintln!("{}", sink::text_line(&record, Format::Lines)),
        }
    }
    Ok(exit_code(
        record.status == Status::Invalid,
        record.status == Status::Failed,
    ))
}

fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let board = npuzzle_solver::Board::parse(&args.board, args.size)
        .map_err(|e| anyhow::anyhow!("bad board: {e}"))?;
    let goal = args.goal.resolve(board.shape())?;
    let (ok, message) = tools::verify(&board, &args.moves, &goal);
    println!("{message}");
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn generate(args: GenArgs) -> anyhow::Result<ExitCode> {
    let goal = args.goal.resolve(args.size)?;
    let kind = args
        .walk
        .map_or(tools::Generate::Uniform, tools::Generate::Walk);
    let mut out = io::BufWriter::new(io::stdout().lock());
    for board in tools::generate(&goal, kind, args.count, args.seed) {
        writeln!(out, "{board}")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn batch(args: BatchArgs) -> anyhow::Result<ExitCode> {
    check_engine(&args.options)?;
    let patience = args.patience.patience(args.options.serial)?;
    if args.resume && args.out.is_none() {
        anyhow::bail!("--resume needs --out FILE: the answers to keep are read from it");
    }
    let mut options = BatchOptions {
        format: args.format,
        settings: settings(&args.options),
        jobs: args.jobs,
        skip: Default::default(),
    };
    let path = args.input.as_deref().filter(|p| p.as_os_str() != "-");
    let input: Box<dyn io::BufRead + Send> = match path {
        None => Box::new(BufReader::new(io::stdin())),
        Some(p) => {
            let file = File::open(p).with_context(|| format!("cannot open {}", p.display()))?;
            Box::new(BufReader::new(file))
        }
    };
    let (out, appending): (Box<dyn Write + Send>, bool) = match (&args.out, args.resume) {
        (Some(p), true) => {
            let (file, done) = sink::resume(p, args.output)
                .with_context(|| format!("cannot resume from {}", p.display()))?;
            let appending = !done.is_empty();
            options.skip = done;
            (Box::new(io::BufWriter::new(file)), appending)
        }
        (Some(p), false) => {
            let file = File::create(p).with_context(|| format!("cannot create {}", p.display()))?;
            (Box::new(io::BufWriter::new(file)), false)
        }
        (None, _) => (Box::new(io::BufWriter::new(io::stdout())), false),
    };
    let mut sink = Sink::new(out, args.output, appending);
    let watched = io::stderr().is_terminal();
    let embedded = !args.options.serial && args.options.coordinator.is_none();
    // One quick pass over a file: its board count for the ETA, and the shapes the embedded
    // worker needs tables for (from stdin it loads all of them).
    let scan = path
        .filter(|_| watched || embedded)
        .and_then(|p| scan_boards(p, args.format, args.options.size, embedded));
    if watched {
        let total = scan
            .as_ref()
            .map(|s| s.boards.saturating_sub(options.skip.len() as u64));
        sink = sink.with_progress(total);
    }
    let skipped = options.skip.len();
    let summary = if args.options.serial {
        batch::run(input, sink, &options)?
    } else {
        let shapes = scan.filter(|_| embedded).map(|s| s.shapes);
        with_coordinator(&args.options, &options.settings, shapes, async |client| {
            Ok(remote::batch(input, sink, client, &options, patience).await?)
        })?
    };
    if watched {
        if skipped > 0 {
            eprintln!("{skipped} boards already answered in the output file; skipped");
        }
        eprintln!("{summary}");
    }
    Ok(exit_code(summary.invalid > 0, summary.failed > 0))
}

/// 0: every board answered (solved or unsolvable); 1: some input was invalid; 3: some board
/// failed (a deadline, a coordinator busy or unreachable for too long): worth running again
/// (`batch --resume` retries only those). Errors that stop the run are 2.
fn exit_code(invalid: bool, failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(3)
    } else if invalid {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// What one pass over a batch file tells.
struct FileScan {
    boards: u64,
    /// The shapes of the boards that parse (filled only when asked for).
    shapes: BTreeSet<Shape>,
}

/// Reads the batch file at `path` through: its board count and, with `want_shapes`, the shapes
/// of its boards. `None` if it cannot be read through.
fn scan_boards(
    path: &std::path::Path,
    format: Format,
    size: Option<Shape>,
    want_shapes: bool,
) -> Option<FileScan> {
    let file = File::open(path).ok()?;
    let reader = npuzzle_client::input::Reader::new(BufReader::new(file), format);
    let mut scan = FileScan {
        boards: 0,
        shapes: BTreeSet::new(),
    };
    for item in reader {
        let item = item.ok()?;
        scan.boards += 1;
        if want_shapes
            && let Ok(board) = npuzzle_solver::Board::parse(&item.text, item.shape.or(size))
        {
            scan.shapes.insert(board.shape());
        }
    }
    Some(scan)
}

/// `1-15` or `2,5,9` (or a mix) as a predicate on ids.
fn id_filter(spec: &str) -> anyhow::Result<Vec<(usize, usize)>> {
    spec.split(',')
        .map(|part| {
            let part = part.trim();
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let parse = |s: &str| {
                s.trim()
                    .parse::<usize>()
                    .with_context(|| format!("bad id range {part:?} (use e.g. 1-15 or 2,5,9)"))
            };
            Ok((parse(a)?, parse(b)?))
        })
        .collect()
}

fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let instances = load_instances(&args.file, args.size, args.ids.as_deref())?;
    let totals = bench::run(
        &instances,
        &args.goal,
        &args.heuristic,
        args.pdb_dir.as_deref(),
        args.time_limit.map(std::time::Duration::from_secs_f64),
        io::stdout().lock(),
    )?;
    Ok(if totals.iter().any(|(_, t)| t.wrong > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn load_instances(
    file: &std::path::Path,
    size: Option<Shape>,
    ids: Option<&str>,
) -> anyhow::Result<Vec<bench::Instance>> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut instances = bench::parse_instances(&text, size).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(spec) = ids {
        let ranges = id_filter(spec)?;
        instances.retain(|i| ranges.iter().any(|&(a, b)| (a..=b).contains(&i.id)));
    }
    Ok(instances)
}

fn cluster_bench(args: ClusterBenchArgs) -> anyhow::Result<ExitCode> {
    let instances = load_instances(&args.file, args.size, args.ids.as_deref())?;
    let Some(first) = instances.first() else {
        anyhow::bail!("no instances selected");
    };
    let goal = args.goal.resolve(first.board.shape())?;
    let pdb = args.heuristic == HeuristicKind::Pdb;
    let serial = if args.compare_serial {
        let solver = if pdb {
            let tables =
                npuzzle_client::engine::pattern_databases(args.pdb_dir.as_deref(), goal.shape())?;
            npuzzle_solver::Solver::with_pdb(goal, tables)?
        } else {
            npuzzle_solver::Solver::new(goal, args.heuristic)?
        };
        Some(solver)
    } else {
        None
    };
    let plan = npuzzle_client::cluster_bench::BenchPlan {
        instances,
        goal,
        heuristic: args.heuristic,
        serial,
        latency_samples: args.latency_samples,
    };
    runtime()?.block_on(async {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let _stop = shutdown.clone().drop_guard();
        let (url, security) = match &args.coordinator {
            Some(url) => (url.clone(), security(&args.token, &args.tls)?),
            None => {
                let config = npuzzle_coordinator::Config::default();
                let tables = pdb.then(|| args.pdb_dir.clone());
                let url = start_local_cluster(
                    config,
                    args.workers,
                    args.threads,
                    tables,
                    "bench",
                    &shutdown,
                )
                .await?;
                (url, ClientSecurity::default())
            }
        };
        let mut client = remote::connect(&url, &security)
            .await
            .map_err(|e| cannot_reach(&url, &e))?;
        let ok =
            npuzzle_client::cluster_bench::run(&mut client, &plan, io::stdout().lock()).await?;
        Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })
}

/// Starts a coordinator on `127.0.0.1:0` and `workers` workers on the current runtime, until
/// `shutdown`; returns the coordinator's URL. With `tables` (`Some(dir)`), the workers load the
/// pattern databases in that directory (`None` inside: the default one); without, none (the
/// load test wants the same cluster on every machine).
async fn start_local_cluster(
    config: npuzzle_coordinator::Config,
    workers: usize,
    threads: Option<usize>,
    tables: Option<Option<PathBuf>>,
    name: &str,
    shutdown: &tokio_util::sync::CancellationToken,
) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(npuzzle_coordinator::run(listener, config, shutdown.clone()));
    let workers = workers.max(1);
    for i in 0..workers {
        let mut config = npuzzle_worker::Config::new(url.clone());
        config.threads = threads.unwrap_or((cores() / workers).max(1));
        config.name = format!("{name}-{i}");
        config.load_pdbs = tables.is_some();
        config.pdb_dir = tables.clone().flatten();
        tokio::spawn(npuzzle_worker::run(config, shutdown.clone()));
    }
    Ok(url)
}

fn load(args: LoadArgs) -> anyhow::Result<ExitCode> {
    use npuzzle_client::load::{self, LoadPlan};
    if args.coordinator.is_some() && args.max_searches.is_some() {
        anyhow::bail!(
            "--max-searches (NPUZZLE_MAX_SEARCHES) configures the embedded coordinator; with --coordinator, set it on that coordinator"
        );
    }
    if !(args.duration > 0.0 && args.duration.is_finite()) {
        anyhow::bail!("--duration must be a positive number of seconds");
    }
    let plan = LoadPlan {
        shape: args.size,
        walk: args.walk,
        requests: args.requests,
        clients: args.clients.max(1),
        connections: args.connections,
        warm: args.warm,
        mix: args.mix,
        seed: args.seed,
        duration: std::time::Duration::from_secs_f64(args.duration),
        timeout: std::time::Duration::from_millis(args.timeout_ms.max(1)),
        max_retry_wait: std::time::Duration::from_millis(args.max_retry_wait_ms),
    };
    plan.check()?;
    runtime()?.block_on(async {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let _stop = shutdown.clone().drop_guard();
        let (url, security) = match &args.coordinator {
            Some(url) => (url.clone(), security(&args.token, &args.tls)?),
            None => {
                let mut config = npuzzle_coordinator::Config::default();
                if let Some(n) = args.max_searches {
                    config.max_searches = n.max(1);
                }
                let url = start_local_cluster(
                    config,
                    args.workers,
                    args.threads,
                    None,
                    "load",
                    &shutdown,
                )
                .await?;
                (url, ClientSecurity::default())
            }
        };
        let report = load::run(&url, &security, &plan).await?;
        let mut out = io::stdout().lock();
        if args.json {
            serde_json::to_writer(&mut out, &report)?;
            writeln!(out)?;
        } else {
            write!(out, "{report}")?;
        }
        Ok(if report.passed {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })
}

fn pdb(command: PdbCommand) -> anyhow::Result<ExitCode> {
    use npuzzle_worker::tables::{TableStore, preferred_partitions, table_shapes};
    match command {
        PdbCommand::Build {
            size,
            partition,
            pdb_dir,
        } => {
            let partition = npuzzle_solver::Partition::named(size, &partition)?;
            let store = TableStore::new(pdb_dir);
            let bar = io::stderr().is_terminal().then(|| {
                let bar = indicatif::ProgressBar::new(0);
                bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} placements ({eta})",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                bar
            });
            let started = std::time::Instant::now();
            let mut total_bytes = 0u64;
            for (i, tiles) in partition.patterns.iter().enumerate() {
                let t = std::time::Instant::now();
                if let Some(b) = &bar {
                    b.set_prefix(format!(
                        "table {}/{} {:?}",
                        i + 1,
                        partition.patterns.len(),
                        tiles
                    ));
                    b.set_position(0);
                }
                let db = npuzzle_solver::PatternDb::build(size, tiles, |done, total| {
                    if let Some(b) = &bar {
                        b.set_length(total);
                        b.set_position(done);
                    }
                })?;
                let bytes = db.to_bytes();
                total_bytes += bytes.len() as u64;
                let path = store.path(&partition, i);
                std::fs::create_dir_all(&store.dir)
                    .with_context(|| format!("cannot create {}", store.dir.display()))?;
                let tmp = path.with_extension("pdb.tmp");
                std::fs::write(&tmp, &bytes)
                    .with_context(|| format!("cannot write {}", tmp.display()))?;
                std::fs::rename(&tmp, &path)?;
                let mut hist = [0u64; 256];
                for &v in db.table() {
                    hist[v as usize] += 1;
                }
                let mean = hist
                    .iter()
                    .enumerate()
                    .map(|(v, &c)| v as f64 * c as f64)
                    .sum::<f64>()
                    / db.table().len() as f64;
                println!(
                    "{}: tiles {:?}, {} entries, {:.1} MB, mean {:.2}, max {}, built in {:.1} s",
                    path.display(),
                    tiles,
                    db.table().len(),
                    bytes.len() as f64 / 1e6,
                    mean,
                    hist.iter().rposition(|&c| c > 0).unwrap_or(0),
                    t.elapsed().as_secs_f64()
                );
            }
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            println!(
                "{} {}: {:.1} MB in {:.1} s",
                size,
                partition.name,
                total_bytes as f64 / 1e6,
                started.elapsed().as_secs_f64()
            );
            Ok(ExitCode::SUCCESS)
        }
        PdbCommand::List { pdb_dir } => {
            let store = TableStore::new(pdb_dir);
            println!("{}", store.dir.display());
            for shape in table_shapes() {
                for name in preferred_partitions(shape) {
                    let partition = npuzzle_solver::Partition::named(shape, name)?;
                    if !store.has(&partition) {
                        continue;
                    }
                    match store.load(&partition, true, false, |_, _, _| {}) {
                        Ok(_) => println!("  {shape} {name}: ok"),
                        Err(e) => println!("  {shape} {name}: {e}"),
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn cluster(args: ClusterArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let address = listener.local_addr()?;
        let shutdown = tokio_util::sync::CancellationToken::new();
        let workers = args.workers.max(1);
        let threads = args.threads.unwrap_or((cores() / workers).max(1));
        let coordinator = tokio::spawn(npuzzle_coordinator::run(
            listener,
            npuzzle_coordinator::Config::default(),
            shutdown.clone(),
        ));
        for i in 0..workers {
            let mut config = npuzzle_worker::Config::new(format!("http://{address}"));
            config.threads = threads;
            config.name = format!("local-{i}");
            config.pdb_dir = args.pdb_dir.clone();
            tokio::spawn(npuzzle_worker::run(config, shutdown.clone()));
        }
        eprintln!(
            "npuzzle cluster on {address}: {workers} worker(s) × {threads} thread(s); Ctrl-C stops it"
        );
        tokio::signal::ctrl_c().await?;
        shutdown.cancel();
        coordinator.await??;
        Ok(ExitCode::SUCCESS)
    })
}

fn stats(args: StatsArgs) -> anyhow::Result<ExitCode> {
    let timeout = std::time::Duration::from_millis(args.timeout_ms.max(1));
    let stats = runtime()?
        .block_on(ops::stats(
            &args.coordinator,
            &security(&args.token, &args.tls)?,
            timeout,
        ))
        .map_err(|e| anyhow::anyhow!(ops::describe(&e)))?;
    let mut out = io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &ops::stats_json(&stats))?;
        writeln!(out)?;
    } else {
        write!(
            out,
            "coordinator     {}\n{}",
            args.coordinator,
            ops::stats_text(&stats)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn health(args: HealthArgs) -> anyhow::Result<ExitCode> {
    let timeout = std::time::Duration::from_millis(args.timeout_ms.max(1));
    let tls = security(&TokenOptions::default(), &args.tls)?;
    let health = runtime()?.block_on(ops::health(&args.coordinator, &args.service, &tls, timeout));
    println!("{}", health.name());
    if let ops::Health::Unknown(why) | ops::Health::Unreachable(why) = &health {
        eprintln!("{why}");
    }
    Ok(ExitCode::from(health.exit_code()))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Logs are for debugging the command line: off unless RUST_LOG asks for them.
    if let Err(e) = npuzzle_telemetry::init_logging(cli.log_format, "off") {
        eprintln!("warning: {e}");
    }
    let result = match cli.command {
        Command::Solve(a) => solve(a),
        Command::Batch(a) => batch(a),
        Command::Verify(a) => verify(a),
        Command::Gen(a) => generate(a),
        Command::Bench(a) => bench(a),
        Command::Trace(a) => trace(a),
        Command::Simulate(a) => simulate(a),
        Command::Cluster(a) => cluster(a),
        Command::ClusterBench(a) => cluster_bench(a),
        Command::Load(a) => load(a),
        Command::Pdb(c) => pdb(c),
        Command::Stats(a) => stats(a),
        Command::Health(a) => health(a),
    };
    match result {
        Ok(code) => code,
        // `npuzzle batch … | head` closes the pipe early: that is the reader's choice, not an error.
        Err(e)
            if e.downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
