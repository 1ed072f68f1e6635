//! `npuzzle`: solve sliding-tile puzzles optimally from the command line. This file holds the
//! flags' top level (the subcommands, the global `--log-format`) and the dispatch; each
//! subcommand lives in its module under `cmd/`.

#![forbid(unsafe_code)]

mod cmd;

use std::io;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use npuzzle_telemetry::cli::LogArgs;

use cmd::{batch, bench, cluster, jobs, load, ops, pdb, simulate, solve, tools};

/// jemalloc, not the system's allocator: the embedded coordinator's scheduler allocates and
/// frees a job's units and tasks by the thousand, and glibc hands freed pages back to the system
/// and faults them in again (docs/benchmarks/2026-12-scheduler-speed.md, "jemalloc, and a smaller task").
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Optimal solutions for sliding-tile puzzles (8-, 15-, 24-puzzle, rectangles up to 5x5).
///
/// Moves name the direction the BLANK moves: U, D, L, R. Every option can also be set by the
/// environment variable named in its help (e.g. NPUZZLE_COORDINATOR).
#[derive(Parser)]
#[command(name = "npuzzle", version)]
// The shared --log-format, global here, and worded for a command line whose logs are off.
#[command(mut_arg("log_format", |a| a.global(true).help(
    "Log lines (on stderr) as `text` or `json`. Logs are off unless RUST_LOG is set (e.g. \
     RUST_LOG=info)"
)))]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    log: LogArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Solve one board and print its moves (or `unsolvable`).
    Solve(solve::SolveArgs),
    /// Solve a file of boards; answers come out in input order.
    Batch(batch::BatchArgs),
    /// Replay moves on a board: say which move is illegal, or where the path ends.
    Verify(tools::VerifyArgs),
    /// Print random solvable boards, one per line (reproducible by --seed).
    Gen(tools::GenArgs),
    /// Benchmark: nodes, time and node rate per instance for each heuristic (one thread).
    Bench(bench::BenchArgs),
    /// Record traces of searches (per bound, the nodes of every subtree at a depth) for
    /// `simulate`.
    Trace(simulate::TraceArgs),
    /// Predict how the cluster scales: recorded traces through the real scheduler with
    /// simulated workers, for each slot count (speed-up, efficiency, the scheduler's own cost).
    Simulate(simulate::SimulateArgs),
    /// Run a whole cluster (a coordinator and N workers) in this process, for trials.
    Cluster(cluster::ClusterArgs),
    /// Benchmark the cluster: time, search overhead, balance, cancel latency, round trips.
    ClusterBench(cluster::ClusterBenchArgs),
    /// Load test: many concurrent clients mixing cached, new, invalid and unsolvable boards;
    /// every answer checked (paths replayed, lengths against the optimum). Exit status 1 when
    /// any answer is lost or wrong.
    Load(load::LoadArgs),
    /// Pattern databases: build them, or list what is on disk.
    #[command(subcommand)]
    Pdb(pdb::PdbCommand),
    /// Show a coordinator's state: workers, search threads, queued work, cache.
    Stats(ops::StatsArgs),
    /// Ask a coordinator whether it is serving (grpc.health.v1). Exit status: 0 SERVING,
    /// 1 NOT_SERVING or unknown, 2 unreachable; usable as a container health probe.
    Health(ops::HealthArgs),
    /// Submit a board to a coordinator as a detached job: print its id and exit; the search
    /// goes on at the coordinator (`wait`, `jobs`, `cancel` follow it).
    Submit(jobs::SubmitArgs),
    /// List a coordinator's detached jobs: id, state, bound, progress, ETA, age, board.
    Jobs(jobs::JobsArgs),
    /// Wait for a detached job and print what `solve` prints (a progress bar on a terminal).
    Wait(jobs::WaitArgs),
    /// Cancel a detached job.
    Cancel(jobs::CancelArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Logs are for debugging the command line: off unless RUST_LOG asks for them.
    if let Err(e) = cli.log.init("off") {
        eprintln!("warning: {e}");
    }
    let result = match cli.command {
        Command::Solve(a) => solve::solve(a),
        Command::Batch(a) => batch::batch(a),
        Command::Verify(a) => tools::verify(a),
        Command::Gen(a) => tools::generate(a),
        Command::Bench(a) => bench::bench(a),
        Command::Trace(a) => simulate::trace(a),
        Command::Simulate(a) => simulate::simulate(a),
        Command::Cluster(a) => cluster::cluster(a),
        Command::ClusterBench(a) => cluster::cluster_bench(a),
        Command::Load(a) => load::load(a),
        Command::Pdb(c) => pdb::pdb(c),
        Command::Stats(a) => ops::stats(a),
        Command::Health(a) => ops::health(a),
        Command::Submit(a) => jobs::submit(a),
        Command::Jobs(a) => jobs::list(a),
        Command::Wait(a) => jobs::wait(a),
        Command::Cancel(a) => jobs::cancel(a),
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every option of every subcommand can be set by an `NPUZZLE_*` environment variable, and
    /// says which in its help.
    #[test]
    fn every_option_names_its_environment_variable() {
        let missing = npuzzle_cluster::testing::flags::options_without_env(&Cli::command());
        assert!(missing.is_empty(), "{missing:#?}");
    }
}
