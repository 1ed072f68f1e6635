//! `npuzzle trace` and `npuzzle simulate`: record what real searches cost, subtree by subtree,
//! then replay them through the real scheduler with simulated workers (see
//! [`npuzzle_coordinator::sim`]) to predict how the cluster scales past this machine.

use std::io::{self, Write};
use std::time::Instant;

use npuzzle_coordinator::sim::{BoundSpan, SimConfig, SimReport, serial_nodes, simulate};
use npuzzle_solver::{Limits, SearchOutcome, Solver, Trace};
use serde::Serialize;

use crate::bench::Instance;

/// Records a trace of each instance: a timed serial search (for the path, the bounds and the
/// node rate), then each bound again, subtree by subtree at `depth`. Progress goes to `log`.
pub fn record<W: Write>(
    instances: &[Instance],
    solver: &Solver,
    heuristic: &str,
    depth: u32,
    mut log: W,
) -> io::Result<Vec<(usize, Trace)>> {
    let mut out = Vec::with_capacity(instances.len());
    for inst in instances {
        let started = Instant::now();
        let report = solver
            .solve(&inst.board, &Limits::default())
            .map_err(io::Error::other)?;
        let secs = started.elapsed().as_secs_f64();
        let SearchOutcome::Solved(path) = report.outcome else {
            return Err(io::Error::other(format!(
                "instance {}: the search ended {:?}",
                inst.id, report.outcome
            )));
        };
        let mut bounds = Vec::with_capacity(report.stats.iterations.len());
        for it in &report.stats.iterations {
            let traced = solver
                .trace_bound(&inst.board, it.bound, depth)
                .map_err(io::Error::other)?;
            bounds.push(traced);
        }
        let trace = Trace {
            board: inst.board,
            goal: *solver.goal(),
            heuristic: heuristic.to_string(),
            rate: report.stats.expanded as f64 / secs.max(1e-9),
            path,
            bounds,
        };
        writeln!(
            log,
            "instance {}: {} moves, {} bounds, {} nodes serial ({:.2} s, {:.1} M nodes/s), {} subtrees traced",
            inst.id,
            trace.path.len(),
            trace.bounds.len(),
            report.stats.expanded,
            secs,
            trace.rate / 1e6,
            trace.bounds.iter().map(|b| b.entries.len()).sum::<usize>()
        )?;
        out.push((inst.id, trace));
    }
    Ok(out)
}

/// One row of the scaling table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub slots: usize,
    pub makespan_s: f64,
    pub serial_s: f64,
    pub speedup: f64,
    pub efficiency: f64,
    /// Share of slot time spent searching.
    pub utilization: f64,
    /// Nodes searched / serial nodes.
    pub overhead: f64,
    pub assignments: u64,
    pub yields: u64,
    /// Tasks sent ahead and taken back before they started.
    pub taken_back: u64,
    pub events: u64,
    /// Commands the scheduler returned for them.
    pub commands: u64,
    /// Scheduler events handled per second of its own (real) time.
    pub scheduler_events_per_s: f64,
    /// Real seconds spent in the scheduler.
    pub scheduler_s: f64,
    /// Virtual seconds the one-threaded coordinator was charged for them, and that over the
    /// makespan (near 1: the coordinator is the bottleneck).
    pub coordinator_s: f64,
    pub coordinator_load: f64,
    /// Virtual milliseconds a message waited for the coordinator, on average and at most.
    pub mean_wait_ms: f64,
    pub max_wait_ms: f64,
    /// Entries the scheduler's loops looked at per event (deterministic; flat if nothing scans
    /// the cluster).
    pub visits_per_event: f64,
    /// Events per virtual second this cluster sent the scheduler.
    pub demanded_events_per_s: f64,
    pub wrong: usize,
    /// Per job and bound, when its tasks ran ([`Output::bounds`]; empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bounds: Vec<BoundRow>,
    /// The share of slot time spent searching in each equal part of the makespan
    /// ([`Output::timeline`] parts; empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<f64>,
}

/// One job's tasks under one bound ([`BoundSpan`]), in milliseconds of virtual time.
#[derive(Clone, Debug, Serialize)]
pub struct BoundRow {
    pub job: u64,
    pub bound: u32,
    pub first_start_ms: f64,
    pub last_end_ms: f64,
    pub tasks: u64,
    /// Slot-milliseconds of search, and that over the slots: how long the bound would take
    /// with every slot on it and nothing else.
    pub busy_slot_ms: f64,
    pub ideal_ms: f64,
}

impl BoundRow {
    fn from(span: &BoundSpan, slots: usize) -> BoundRow {
        BoundRow {
            job: span.job,
            bound: span.bound,
            first_start_ms: span.first_start * 1e3,
            last_end_ms: span.last_end * 1e3,
            tasks: span.tasks,
            busy_slot_ms: span.busy_secs * 1e3,
            ideal_ms: span.busy_secs * 1e3 / slots.max(1) as f64,
        }
    }
}

/// How [`table`] writes its rows.
#[derive(Clone, Copy, Debug, Default)]
pub struct Output {
    /// One JSON object per slot count instead of a table.
    pub json: bool,
    /// Each row's bounds ([`BoundRow`]) too.
    pub bounds: bool,
    /// Each row's makespan in this many parts, with the share of slot time busy in each (0:
    /// none).
    pub timeline: usize,
}

impl Row {
    fn from(report: &SimReport) -> Row {
        Row {
            slots: report.slots,
            makespan_s: report.makespan,
            serial_s: report.serial_secs,
            speedup: report.speedup(),
            efficiency: report.efficiency(),
            utilization: report.utilization(),
            overhead: report.nodes as f64 / report.serial_nodes.max(1) as f64,
            assignments: report.assignments,
            yields: report.yields,
            taken_back: report.taken_back,
            events: report.events,
            commands: report.commands,
            scheduler_events_per_s: report.events_per_sec(),
            scheduler_s: report.scheduler_secs,
            coordinator_s: report.coordinator_secs,
            coordinator_load: report.coordinator_load(),
            mean_wait_ms: report.mean_wait() * 1e3,
            max_wait_ms: report.max_wait_secs * 1e3,
            visits_per_event: report.visits_per_event(),
            demanded_events_per_s: report.demanded_events_per_sec(),
            wrong: report.wrong,
            bounds: Vec::new(),
            timeline: report.timeline.clone(),
        }
    }
}

/// Simulates `traces` on each slot count and writes the table (or JSON lines).
pub fn table<W: Write>(
    traces: &[Trace],
    slot_counts: &[usize],
    config: &SimConfig,
    output: Output,
    mut out: W,
) -> io::Result<Vec<Row>> {
    let json = output.json;
    let serial: u64 = traces.iter().map(serial_nodes).sum();
    if !json {
        writeln!(
            out,
            "{} trace(s), {} serial nodes; latency {:.3} ms one way, {} slot(s) per worker, {} job(s) in flight; coordinator cost {}; prefetch {}; async bounds {}",
            traces.len(),
            serial,
            config.latency.as_secs_f64() * 1e3,
            config.slots_per_worker,
            config.jobs_in_flight,
            config.coordinator_cost,
            if config.scheduler.prefetch {
                "on"
            } else {
                "off"
            },
            if config.scheduler.async_bounds {
                "on"
            } else {
                "off"
            }
        )?;
        writeln!(
            out,
            "{:>6} {:>11} {:>9} {:>8} {:>6} {:>6} {:>8} {:>9} {:>7} {:>8} {:>9} {:>12} {:>12} {:>9} {:>6} {:>8} {:>7}",
            "slots",
            "makespan_s",
            "speedup",
            "effic",
            "busy",
            "overhd",
            "assigned",
            "yields",
            "taken",
            "events",
            "sched_s",
            "sched_ev/s",
            "demand_ev/s",
            "coord_s",
            "c_load",
            "wait_ms",
            "visits"
        )?;
    }
    let mut rows = Vec::new();
    for &slots in slot_counts {
        let report = simulate(
            traces,
            &SimConfig {
                slots,
                timeline_bins: output.timeline,
                ..config.clone()
            },
        );
        let mut row = Row::from(&report);
        if output.bounds {
            row.bounds = (report.bounds.iter())
                .map(|span| BoundRow::from(span, slots))
                .collect();
        }
        if json {
            writeln!(
                out,
                "{}",
                serde_json::to_string(&row).map_err(io::Error::other)?
            )?;
        } else {
            writeln!(
                out,
                "{:>6} {:>11.4} {:>9.2} {:>8.3} {:>6.3} {:>6.3} {:>8} {:>9} {:>7} {:>8} {:>9.4} {:>12.0} {:>12.0} {:>9.4} {:>6.3} {:>8.4} {:>7.1}{}",
                row.slots,
                row.makespan_s,
                row.speedup,
                row.efficiency,
                row.utilization,
                row.overhead,
                row.assignments,
                row.yields,
                row.taken_back,
                row.events,
                row.scheduler_s,
                row.scheduler_events_per_s,
                row.demanded_events_per_s,
                row.coordinator_s,
                row.coordinator_load,
                row.mean_wait_ms,
                row.visits_per_event,
                if row.wrong > 0 { "  WRONG" } else { "" }
            )?;
            for b in &row.bounds {
                writeln!(
                    out,
                    "        job {} bound {}: {:.2} to {:.2} ms ({:.2} ms), {} tasks, {:.1} slot-ms ({:.2} ms on every slot)",
                    b.job,
                    b.bound,
                    b.first_start_ms,
                    b.last_end_ms,
                    b.last_end_ms - b.first_start_ms,
                    b.tasks,
                    b.busy_slot_ms,
                    b.ideal_ms
                )?;
            }
            if !row.timeline.is_empty() {
                let width = row.makespan_s * 1e3 / row.timeline.len() as f64;
                let shares: Vec<String> = (row.timeline.iter())
                    .map(|u| format!("{:.0}", u * 100.0))
                    .collect();
                writeln!(
                    out,
                    "        busy % per {width:.2} ms: {}",
                    shares.join(" ")
                )?;
            }
        }
        out.flush()?;
        rows.push(row);
    }
    Ok(rows)
}
