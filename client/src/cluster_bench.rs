//! `npuzzle cluster-bench`: what distribution costs and gains. Solves instances through a
//! coordinator one at a time (cache skipped) and reports, against a serial search of the same
//! instances with the same heuristic: total time, search overhead (nodes distributed / nodes
//! serial), load balance (mean / max nodes per worker), cancel latency (answer → every slot idle)
//! and the nodes searched after the cancel; then round-trip latencies for 8-puzzles and for
//! cache hits.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use npuzzle_proto::{board_to_wire, goal_to_wire, heuristic_to_wire, v1};
use npuzzle_solver::{Board, Goal, HeuristicKind, Limits, Move, Shape, Solver};

use crate::bench::Instance;

/// What to measure.
pub struct BenchPlan {
    pub instances: Vec<Instance>,
    pub goal: Goal,
    pub heuristic: HeuristicKind,
    /// Also search each instance serially with this solver (the same heuristic, and for `pdb`
    /// the same tables), in this process, for the overhead ratio.
    pub serial: Option<Solver>,
    /// Round trips to time for 8-puzzles and for cache hits.
    pub latency_samples: usize,
}

/// The `p` quantile (0 to 1) of `sorted` values, nearest rank; NaN when there are none.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn request(
    board: &Board,
    goal: &Goal,
    heuristic: HeuristicKind,
    skip_cache: bool,
) -> v1::SolveRequest {
    v1::SolveRequest {
        board: Some(board_to_wire(board)),
        goal: Some(goal_to_wire(goal)),
        heuristic: heuristic_to_wire(heuristic) as i32,
        skip_cache,
        ..Default::default()
    }
}

async fn stats(client: &mut npuzzle_cluster::Coordinator) -> io::Result<v1::StatsResponse> {
    Ok(client
        .stats(v1::StatsRequest {})
        .await
        .map_err(|s| io::Error::other(s.message().to_string()))?
        .into_inner())
}

/// Random 8-puzzles: walks of 40 moves from the goal, reproducible by seed.
fn eight_puzzles(count: usize, seed: u64) -> Vec<Board> {
    let goal = Goal::blank_last(Shape::new(3, 3).unwrap_or_else(|_| unreachable!()));
    let mut s = seed;
    (0..count)
        .map(|_| {
            let mut b = *goal.board();
            for _ in 0..40 {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if let Some(n) = b.after(Move::ALL[(s >> 33) as usize % 4]) {
                    b = n;
                }
            }
            b
        })
        .collect()
}

/// Runs the plan through the coordinator at `url` (`client`), once a worker has joined it
/// (at most [`npuzzle_cluster::JOIN_TIMEOUT`]), writing the table to `out`; `false` when an
/// answer was wrong.
pub async fn run<W: Write>(
    client: &mut npuzzle_cluster::Coordinator,
    url: &str,
    plan: &BenchPlan,
    mut out: W,
) -> io::Result<bool> {
    let s = npuzzle_cluster::wait_for_workers(client, url, 1)
        .await
        .map_err(io::Error::other)?;
    writeln!(
        out,
        "cluster: {} worker(s), {} slot(s); heuristic {}",
        s.workers, s.slots, plan.heuristic
    )?;
    writeln!(
        out,
        "{:>4} {:>4} {:>9} {:>9} {:>13} {:>13} {:>8} {:>6} {:>6} {:>8} {:>10}",
        "id",
        "len",
        "cluster_s",
        "serial_s",
        "nodes",
        "serial_nodes",
        "overhd",
        "units",
        "splits",
        "balance",
        "cancel_ms"
    )?;
    let (mut t_cluster, mut t_serial, mut n_cluster, mut n_serial) = (0.0, 0.0, 0u64, 0u64);
    let mut totals_by_worker: Vec<u64> = Vec::new();
    let mut cancel_ms = Vec::new();
    let mut balances = Vec::new();
    let mut all_ok = true;
    let after_cancel_start = s.late_nodes;
    for inst in &plan.instances {
        let started = Instant::now();
        let r = client
            .solve(request(&inst.board, &plan.goal, plan.heuristic, true))
            .await
            .map_err(|s| io::Error::other(s.message().to_string()))?
            .into_inner();
        let answered = Instant::now();
        let secs = (answered - started).as_secs_f64();
        // Cancel latency: from the answer until no slot holds a unit.
        loop {
            if stats(client).await?.busy_slots == 0 {
                break;
            }
            if answered.elapsed() > Duration::from_secs(10) {
                break;
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        let idle_ms = answered.elapsed().as_secs_f64() * 1e3;
        let path = npuzzle_solver::parse_moves(&r.moves).map_err(io::Error::other)?;
        let ok = inst
            .board
            .verify(&path, &plan.goal)
            .is_ok_and(|v| v.reaches_goal)
            && inst.optimal.is_none_or(|o| o == path.len());
        all_ok &= ok;
        let (s_secs, s_nodes) = if let Some(serial) = &plan.serial {
            let rep = serial
                .solve(&inst.board, &Limits::default())
                .map_err(io::Error::other)?;
            (rep.stats.elapsed.as_secs_f64(), rep.stats.expanded)
        } else {
            (f64::NAN, 0)
        };
        let balance = match r.worker_nodes.iter().max() {
            Some(&max) if max > 0 => {
                r.worker_nodes.iter().sum::<u64>() as f64 / r.worker_nodes.len() as f64 / max as f64
            }
            _ => f64::NAN,
        };
        if totals_by_worker.len() < r.worker_nodes.len() {
            totals_by_worker.resize(r.worker_nodes.len(), 0);
        }
        for (t, n) in totals_by_worker.iter_mut().zip(&r.worker_nodes) {
            *t += n;
        }
        if r.units > 0 {
            cancel_ms.push(idle_ms);
            balances.push(balance);
        }
        t_cluster += secs;
        t_serial += s_secs;
        n_cluster += r.nodes;
        n_serial += s_nodes;
        writeln!(
            out,
            "{:>4} {:>4} {:>9.4} {:>9.4} {:>13} {:>13} {:>8.3} {:>6} {:>6} {:>8.3} {:>10.2}{}",
            inst.id,
            path.len(),
            secs,
            s_secs,
            r.nodes,
            s_nodes,
            r.nodes as f64 / s_nodes as f64,
            r.units,
            r.splits,
            balance,
            idle_ms,
            if ok { "" } else { "  WRONG" }
        )?;
        out.flush()?;
    }
    let after_cancel = stats(client).await?.late_nodes - after_cancel_start;
    writeln!(out)?;
    writeln!(
        out,
        "total: cluster {t_cluster:.2} s, serial {t_serial:.2} s (speed-up {:.2}x); nodes {n_cluster} vs {n_serial} (search overhead {:.3})",
        t_serial / t_cluster,
        n_cluster as f64 / n_serial as f64
    )?;
    if let Some(&max) = totals_by_worker.iter().max() {
        let mean = totals_by_worker.iter().sum::<u64>() as f64 / totals_by_worker.len() as f64;
        let per_instance = balances.iter().filter(|b| b.is_finite()).sum::<f64>()
            / balances.iter().filter(|b| b.is_finite()).count().max(1) as f64;
        writeln!(
            out,
            "balance: all instances {:.3} (worker totals {:?}); per distributed instance, mean {:.3}",
            mean / max as f64,
            totals_by_worker,
            per_instance
        )?;
    }
    cancel_ms.sort_by(f64::total_cmp);
    writeln!(
        out,
        "cancel latency (answer → all slots idle, polled): p50 {:.2} ms, max {:.2} ms; late nodes {after_cancel} (whole units running when their job ended)",
        percentile(&cancel_ms, 0.5),
        cancel_ms.last().copied().unwrap_or(f64::NAN)
    )?;

    if plan.latency_samples > 0 {
        let goal8 = Goal::blank_last(Shape::new(3, 3).map_err(io::Error::other)?);
        let boards = eight_puzzles(plan.latency_samples, 7);
        let mut rtt = Vec::with_capacity(boards.len());
        for b in &boards {
            let t = Instant::now();
            client
                .solve(request(b, &goal8, HeuristicKind::best_for(b.shape()), true))
                .await
                .map_err(|s| io::Error::other(s.message().to_string()))?;
            rtt.push(t.elapsed().as_secs_f64() * 1e3);
        }
        rtt.sort_by(f64::total_cmp);
        let mut hits = Vec::with_capacity(boards.len());
        for b in &boards {
            let t = Instant::now();
            let r = client
                .solve(request(
                    b,
                    &goal8,
                    HeuristicKind::best_for(b.shape()),
                    false,
                ))
                .await
                .map_err(|s| io::Error::other(s.message().to_string()))?
                .into_inner();
            if r.cached {
                hits.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        hits.sort_by(f64::total_cmp);
        writeln!(
            out,
            "8-puzzle round trip ({} boards, cache skipped): p50 {:.3} ms, p99 {:.3} ms",
            rtt.len(),
            percentile(&rtt, 0.5),
            percentile(&rtt, 0.99)
        )?;
        writeln!(
            out,
            "cache hit round trip ({} hits): p50 {:.3} ms, p99 {:.3} ms",
            hits.len(),
            percentile(&hits, 0.5),
            percentile(&hits, 0.99)
        )?;
    }
    Ok(all_ok)
}
