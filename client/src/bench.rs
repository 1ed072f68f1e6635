//! `npuzzle bench`: solve a file of instances on one thread with each heuristic and report
//! nodes, time and node rate per instance and in total; check lengths against the listed optima.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use npuzzle_solver::{
    Board, BoundForecast, GoalSpec, HeuristicKind, Limits, SearchOutcome, Shape, Solver,
};

/// One benchmark instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// The id given in the file, or the 1-based line order.
    pub id: usize,
    /// The listed optimal length, if the file gives one.
    pub optimal: Option<usize>,
    pub board: Board,
}

/// Reads instances: each line is either a board, or `id optimal_length tiles…` (Korf's files).
/// Blank lines and `#` comments are skipped.
pub fn parse_instances(text: &str, shape: Option<Shape>) -> Result<Vec<Instance>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let tokens: Vec<&str> = t
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .collect();
        let cells = |k: usize| shape.map_or(Shape::infer(k).is_some(), |s| s.cells() == k);
        let err = |e: String| format!("line {}: {e}", n + 1);
        let instance = if !cells(tokens.len()) && tokens.len() > 2 && cells(tokens.len() - 2) {
            let id = tokens[0]
                .parse()
                .map_err(|_| err(format!("bad id {:?}", tokens[0])))?;
            let optimal = tokens[1]
                .parse()
                .map_err(|_| err(format!("bad length {:?}", tokens[1])))?;
            Instance {
                id,
                optimal: Some(optimal),
                board: Board::parse(&tokens[2..].join(" "), shape)
                    .map_err(|e| err(e.to_string()))?,
            }
        } else {
            Instance {
                id: out.len() + 1,
                optimal: None,
                board: Board::parse(t, shape).map_err(|e| err(e.to_string()))?,
            }
        };
        out.push(instance);
    }
    Ok(out)
}

/// Totals for one heuristic.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    pub instances: usize,
    pub expanded: u64,
    pub generated: u64,
    pub elapsed: Duration,
    /// Instances whose length differed from the listed optimum.
    pub wrong: usize,
    /// Instances stopped by the time limit.
    pub timed_out: usize,
}

/// Runs every instance with each heuristic; writes a table to `out`.
pub fn run<W: Write>(
    instances: &[Instance],
    goal: &GoalSpec,
    heuristics: &[HeuristicKind],
    pdb_dir: Option<&std::path::Path>,
    time_limit: Option<Duration>,
    iterations: bool,
    mut out: W,
) -> io::Result<Vec<(HeuristicKind, Totals)>> {
    let mut all = Vec::new();
    for &kind in heuristics {
        writeln!(
            out,
            "{:<3} {:>4} {:>4} {:>4} {:>14} {:>14} {:>10} {:>9}",
            "h", "id", "len", "opt", "expanded", "generated", "seconds", "Mexp/s"
        )?;
        let mut totals = Totals::default();
        let mut solvers: Vec<Solver> = Vec::new();
        for inst in instances {
            let goal = goal.resolve(inst.board.shape()).map_err(io::Error::other)?;
            let solver = match solvers.iter().position(|s| *s.goal() == goal) {
                Some(i) => &solvers[i],
                None => {
                    let solver = if kind == HeuristicKind::Pdb {
                        let t = std::time::Instant::now();
                        let pdb = crate::engine::pattern_databases(pdb_dir, goal.shape())
                            .map_err(io::Error::other)?;
                        writeln!(
                            out,
                            "pdb tables for {} loaded and verified in {:.2} s",
                            goal.shape(),
                            t.elapsed().as_secs_f64()
                        )?;
                        Solver::with_pdb(goal, pdb).map_err(io::Error::other)?
                    } else {
                        Solver::new(goal, kind).map_err(io::Error::other)?
                    };
                    solvers.push(solver);
                    &solvers[solvers.len() - 1]
                }
            };
            let cancel = AtomicBool::new(false);
            let report = std::thread::scope(|scope| {
                let (stop_timer, stopped) = std::sync::mpsc::channel::<()>();
                if let Some(limit) = time_limit {
                    let cancel = &cancel;
                    scope.spawn(move || {
                        if stopped.recv_timeout(limit).is_err() {
                            cancel.store(true, Ordering::Relaxed);
                        }
                    });
                }
                let limits = Limits {
                    cancel: Some(&cancel),
                    ..Limits::default()
                };
                let report = solver.solve(&inst.board, &limits);
                drop(stop_timer);
                report
            })
            .map_err(io::Error::other)?;
            let len = match &report.outcome {
                SearchOutcome::Solved(p) => {
                    let reaches = inst.board.verify(p, &goal).is_ok_and(|v| v.reaches_goal);
                    reaches.then_some(p.len())
                }
                _ => None,
            };
            let timed_out = matches!(report.outcome, SearchOutcome::Cancelled);
            let s = report.stats.elapsed.as_secs_f64();
            let ok = timed_out || inst.optimal.is_none() || inst.optimal == len;
            writeln!(
                out,
                "{:<3} {:>4} {:>4} {:>4} {:>14} {:>14} {:>10.3} {:>9.1}{}",
                kind.name(),
                inst.id,
                len.map_or("-".into(), |l| l.to_string()),
                inst.optimal.map_or("-".into(), |l| l.to_string()),
                report.stats.expanded,
                report.stats.generated,
                s,
                report.stats.expanded as f64 / s.max(1e-9) / 1e6,
                if timed_out {
                    format!(
                        "  TIME LIMIT (bound {} not exhausted)",
                        report.stats.iterations.last().map_or(0, |i| i.bound)
                    )
                } else if ok {
                    String::new()
                } else {
                    "  WRONG LENGTH".to_string()
                }
            )?;
            if iterations {
                write_iterations(&mut out, &report.stats.iterations, timed_out)?;
            }
            out.flush()?;
            totals.instances += 1;
            totals.timed_out += usize::from(timed_out);
            totals.expanded += report.stats.expanded;
            totals.generated += report.stats.generated;
            totals.elapsed += report.stats.elapsed;
            totals.wrong += usize::from(!ok);
        }
        let s = totals.elapsed.as_secs_f64().max(1e-9);
        writeln!(
            out,
            "{} total: {} instances, {} expanded, {} generated, {:.2} s, {:.1} M expanded/s, {:.1} M generated/s (one core){}\n",
            kind.name(),
            totals.instances,
            totals.expanded,
            totals.generated,
            s,
            totals.expanded as f64 / s / 1e6,
            totals.generated as f64 / s / 1e6,
            if totals.wrong > 0 {
                format!(", {} WRONG", totals.wrong)
            } else {
                String::new()
            } + &if totals.timed_out > 0 {
                format!(", {} stopped by the time limit", totals.timed_out)
            } else {
                String::new()
            }
        )?;
        all.push((kind, totals));
    }
    Ok(all)
}

/// One line per iteration under an instance's row: its bound, the nodes it expanded, and what
/// [`BoundForecast`] predicted for it from the iterations before (the model behind the cluster's
/// ETAs), with the ratio actual / predicted. The last iteration stops at the answer (or the time
/// limit), short of what exhausting it would cost: it is marked.
fn write_iterations<W: Write>(
    out: &mut W,
    iterations: &[npuzzle_solver::Iteration],
    stopped: bool,
) -> io::Result<()> {
    let mut forecast = BoundForecast::default();
    for (i, it) in iterations.iter().enumerate() {
        let predicted = forecast.predict(it.bound);
        let last = i + 1 == iterations.len();
        writeln!(
            out,
            "      bound {:>3} {:>14} expanded  forecast {:>14}  actual/forecast {:>6}{}",
            it.bound,
            it.expanded,
            predicted.map_or("-".into(), |p| p.to_string()),
            predicted.filter(|&p| p > 0).map_or("-".into(), |p| format!(
                "{:.2}",
                it.expanded as f64 / p as f64
            )),
            match (last, stopped) {
                (true, true) => "  (stopped by the time limit)",
                (true, false) => "  (stopped at the answer)",
                _ => "",
            }
        )?;
        forecast.finished(it.bound, it.expanded);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_korf_lines_and_plain_boards() {
        let text = "# c\n1 57 14 13 15 7 11 12 9 5 6 0 2 1 4 8 10 3\n1 2 3 4 5 6 7 8 0\n";
        let v = parse_instances(text, None).unwrap();
        assert_eq!((v[0].id, v[0].optimal), (1, Some(57)));
        assert_eq!((v[1].id, v[1].optimal), (2, None));
        assert!(
            parse_instances("1 2 3\n", None)
                .unwrap_err()
                .starts_with("line 1:")
        );
    }
}
