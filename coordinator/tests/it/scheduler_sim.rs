//! The scheduler under a simulated cluster: workers run real unit searches, but the test decides
//! who runs when, who disappears, and which results arrive late, twice or out of order; and
//! which workers hold pattern databases.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use npuzzle_cluster::testing::{assert_optimal, assert_reaches_goal};
use npuzzle_coordinator::scheduler::{
    Assignment, Capabilities, Checkpoint, ClientId, Command, HandedBack, HeuristicUnavailable,
    JobId, JobOutcome, JobSpec, JobStats, Report, Scheduler, SchedulerConfig, TaskId, UnitResult,
    WorkerId,
};
use npuzzle_solver::{
    Board, Goal, HeuristicKind, Limits, Partition, PdbHeuristic, Shape, Solver, UnitOutcome,
};

// Korf's instances #12, #42 and #55 (goal blank-first): 45, 42 and 41 moves.
const KORF_12: &str = "14 1 9 6 4 8 12 5 7 2 3 0 10 11 13 15";
const KORF_42: &str = "4 5 7 2 9 14 12 13 0 3 6 11 8 1 15 10";
const KORF_55: &str = "13 8 14 3 9 1 0 7 15 5 4 10 12 2 6 11";

struct Sim {
    sched: Scheduler,
    /// Nodes the workers expanded twice beyond one per reported split: the stop node of a
    /// search that then searched all its pieces itself, and pieces it gave up part-way
    /// (`UnitReport::repeated`).
    searched_again: std::cell::Cell<u64>,
    now: Instant,
    inbox: HashMap<WorkerId, VecDeque<Assignment>>,
    /// What the workers search each job with (pattern databases for PDB jobs; the coordinator's
    /// spec then carries linear conflict).
    solvers: HashMap<JobId, Arc<Solver>>,
    /// Every assignment, in order, with the worker it went to.
    assigned: Vec<(WorkerId, Assignment)>,
    finished: Vec<(JobId, JobOutcome, JobStats)>,
    cancels: Vec<(WorkerId, JobId)>,
    disconnected: Vec<WorkerId>,
    progress: Vec<(JobId, u32, bool)>,
    /// Every result delivered, for replaying duplicates.
    delivered: Vec<(WorkerId, UnitResult)>,
    /// Assignments asked back, with the node count to stop at.
    asked_back: HashMap<(JobId, u32, TaskId), u64>,
    /// The slots of workers that queue tasks sent ahead (`Capabilities::prefetch`): the first
    /// that many of their inbox are running, the rest wait, and are answered `NotStarted` when
    /// asked back.
    prefetchers: HashMap<WorkerId, usize>,
    /// Tasks answered `NotStarted`, with their worker.
    taken_back: Vec<(WorkerId, Assignment)>,
}

impl Sim {
    fn new(config: SchedulerConfig) -> Sim {
        Sim {
            sched: Scheduler::new(config),
            now: Instant::now(),
            inbox: HashMap::new(),
            solvers: HashMap::new(),
            assigned: Vec::new(),
            finished: Vec::new(),
            cancels: Vec::new(),
            disconnected: Vec::new(),
            progress: Vec::new(),
            delivered: Vec::new(),
            asked_back: HashMap::new(),
            prefetchers: HashMap::new(),
            taken_back: Vec::new(),
            searched_again: std::cell::Cell::new(0),
        }
    }

    fn handle(&mut self, commands: Vec<Command>) {
        for c in commands {
            match c {
                Command::Assign { worker, assignment } => {
                    self.assigned.push((worker, assignment.clone()));
                    self.inbox.entry(worker).or_default().push_back(assignment)
                }
                Command::Cancel { worker, job } => {
                    self.cancels.push((worker, job));
                    // The worker drops that job's queued units (reporting them cancelled).
                    let queue = self.inbox.entry(worker).or_default();
                    let (gone, kept): (Vec<_>, Vec<_>) =
                        queue.drain(..).partition(|a| a.job == job);
                    *queue = kept.into();
                    for a in gone {
                        let r = UnitResult {
                            job: a.job,
                            epoch: a.epoch,
                            task: a.task,
                            report: Report::Cancelled,
                            expanded: 0,
                            iterations: Vec::new(),
                        };
                        let cmds = self.sched.on_result(worker, r, self.now);
                        self.handle(cmds);
                    }
                }
                Command::Yield {
                    worker,
                    job,
                    epoch,
                    task,
                    after_nodes,
                } => {
                    // A prefetching worker answers at once for a task it has not started.
                    let slots = self.prefetchers.get(&worker).copied();
                    let queue = self.inbox.entry(worker).or_default();
                    let waiting = queue
                        .iter()
                        .position(|a| (a.job, a.epoch, a.task) == (job, epoch, task))
                        .filter(|&i| slots.is_some_and(|s| i >= s));
                    if let Some(a) = waiting.and_then(|i| queue.remove(i)) {
                        self.taken_back.push((worker, a));
                        let r = UnitResult {
                            job,
                            epoch,
                            task,
                            report: Report::NotStarted,
                            expanded: 0,
                            iterations: Vec::new(),
                        };
                        let cmds = self.sched.on_result(worker, r, self.now);
                        self.handle(cmds);
                    } else {
                        self.asked_back.insert((job, epoch, task), after_nodes);
                    }
                }
                Command::Revoked { .. } => {}
                Command::Disconnect { worker, .. } => {
                    // The connection closes: whatever the worker had queued is gone with it.
                    self.disconnected.push(worker);
                    self.inbox.remove(&worker);
                }
                Command::Progress {
                    job,
                    bound,
                    finished,
                    ..
                } => self.progress.push((job, bound, finished)),
                Command::Finish {
                    job,
                    outcome,
                    stats,
                } => self.finished.push((job, outcome, stats)),
            }
        }
    }

    fn add_worker(&mut self, id: impl Into<WorkerId>, slots: usize) {
        self.add_worker_with(id, slots, Capabilities::default());
    }

    fn add_worker_with(
        &mut self,
        id: impl Into<WorkerId>,
        slots: usize,
        capabilities: Capabilities,
    ) {
        let id = id.into();
        self.inbox.entry(id).or_default();
        if capabilities.prefetch {
            self.prefetchers.insert(id, slots);
        }
        let cmds = self.sched.add_worker(id, slots, capabilities, self.now);
        self.handle(cmds);
    }

    fn submit(&mut self, id: impl Into<JobId>, board: &str, goal: Goal, min_units: usize) -> Board {
        self.submit_for(id, board, goal, min_units, ClientId::default())
    }

    /// [`Sim::submit`] for `client`.
    fn submit_for(
        &mut self,
        id: impl Into<JobId>,
        board: &str,
        goal: Goal,
        min_units: usize,
        client: ClientId,
    ) -> Board {
        let solver = Arc::new(Solver::new(goal, HeuristicKind::LinearConflict).unwrap());
        self.submit_searched_with(id, board, goal, min_units, solver, client)
    }

    /// A job whose units the workers search with pattern databases (4x4 5-5-5), while the
    /// coordinator's own solver, as in the real service, uses linear conflict.
    fn submit_pdb(&mut self, id: impl Into<JobId>, board: &str, min_units: usize) -> Board {
        let goal = korf_goal();
        let workers = Arc::new(Solver::with_pdb(goal, pdb()).unwrap());
        self.submit_searched_with(id, board, goal, min_units, workers, ClientId::default())
    }

    fn submit_searched_with(
        &mut self,
        id: impl Into<JobId>,
        board: &str,
        goal: Goal,
        min_units: usize,
        workers: Arc<Solver>,
        client: ClientId,
    ) -> Board {
        let id = id.into();
        let solver = Arc::new(Solver::new(goal, HeuristicKind::LinearConflict).unwrap());
        let root = Board::parse(board, None).unwrap();
        let frontier = solver.frontier(&root, min_units).unwrap();
        assert!(frontier.solved.is_none());
        let heuristic = workers.heuristic();
        self.solvers.insert(id, workers);
        let cmds = self.sched.submit(JobSpec {
            id,
            goal,
            heuristic,
            solver,
            root,
            units: frontier.units,
            whole: false,
            resume: None,
            client,
        });
        self.handle(cmds);
        root
    }

    /// A whole job: the root searched bound after bound by one slot until asked back.
    fn submit_whole(&mut self, id: impl Into<JobId>, board: &str, workers: Arc<Solver>) -> Board {
        self.submit_whole_for(id, board, workers, ClientId::default())
    }

    /// [`Sim::submit_whole`] for `client`.
    fn submit_whole_for(
        &mut self,
        id: impl Into<JobId>,
        board: &str,
        workers: Arc<Solver>,
        client: ClientId,
    ) -> Board {
        let id = id.into();
        let goal = korf_goal();
        let solver = Arc::new(Solver::new(goal, HeuristicKind::LinearConflict).unwrap());
        let root = Board::parse(board, None).unwrap();
        let heuristic = workers.heuristic();
        self.solvers.insert(id, workers);
        let mut spec = JobSpec::whole(id, goal, heuristic, solver, root);
        spec.client = client;
        let cmds = self.sched.submit(spec);
        self.handle(cmds);
        root
    }

    /// Runs the search of an assignment as a worker would (stopping where it was asked back).
    fn search(&self, a: &Assignment) -> UnitResult {
        let (result, again) = sim_search(
            &self.solvers[&a.job],
            a,
            self.asked_back.get(&(a.job, a.epoch, a.task)).copied(),
        );
        self.searched_again.set(self.searched_again.get() + again);
        result
    }

    /// Worker `w` finishes its oldest (or newest) assignment. False if it had none.
    fn step(&mut self, w: impl Into<WorkerId>, newest_first: bool) -> bool {
        let w = w.into();
        let queue = self.inbox.entry(w).or_default();
        let next = if newest_first {
            queue.pop_back()
        } else {
            queue.pop_front()
        };
        let Some(a) = next else { return false };
        let result = self.search(&a);
        self.delivered.push((w, result.clone()));
        self.now += Duration::from_millis(1);
        let cmds = self.sched.on_result(w, result, self.now);
        self.handle(cmds);
        true
    }

    /// Runs workers in turns (`speeds[i]` steps per turn) until nothing is left to do.
    fn run(&mut self, speeds: &[(u64, usize)], newest_first: bool) {
        for _ in 0..1_000_000 {
            let mut any = false;
            for &(w, n) in speeds {
                let w = WorkerId(w);
                for _ in 0..n {
                    any |= self.step(w, newest_first);
                }
            }
            if !any {
                return;
            }
        }
        panic!("the simulation did not settle");
    }

    fn solved_path(&self, job: impl Into<JobId>) -> Vec<npuzzle_solver::Move> {
        let job = job.into();
        let found: Vec<_> = self.finished.iter().filter(|(j, _, _)| *j == job).collect();
        assert_eq!(found.len(), 1, "job {job} finished exactly once");
        match &found[0].1 {
            JobOutcome::Solved { path } => path.clone(),
            other => panic!("job {job}: {other:?}"),
        }
    }
}

/// A worker's search of `a`, stopping at `hand_back` nodes if it was asked back. The unit's
/// prefix is not sent to workers: the search starts from an empty one, as a worker's does.
/// A worker's search of `a`, and the nodes it expanded twice beyond a split's stop node (see
/// [`Sim::searched_again`]).
fn sim_search(solver: &Solver, a: &Assignment, hand_back: Option<u64>) -> (UnitResult, u64) {
    let budget = std::sync::atomic::AtomicU64::new(hand_back.unwrap_or(u64::MAX));
    let limits = Limits {
        node_budget: (a.node_budget > 0).then_some(a.node_budget),
        hand_back: Some(&budget),
        ..Limits::default()
    };
    // As a worker gets it: the moves before the board as its trail, no prefix.
    let unit = npuzzle_solver::WorkUnit {
        prefix: Vec::new(),
        trail: a.work.recent_moves(),
        ..(*a.work).clone()
    };
    let r = if a.iterate {
        solver.search_from(&unit, a.bound, &limits).unwrap()
    } else {
        solver.search_unit(&unit, a.bound, &limits).unwrap()
    };
    let stopped_unsplit = r.absorbed > 0 && !matches!(r.outcome, UnitOutcome::Split(_));
    let again = r.repeated + u64::from(stopped_unsplit);
    let report = match r.outcome {
        UnitOutcome::Found(path) => Report::Found(path),
        UnitOutcome::Exhausted { next_bound } => Report::Exhausted { next_bound },
        UnitOutcome::Cancelled => Report::Cancelled,
        UnitOutcome::Split(split) => Report::Split {
            bound: split.bound,
            next_bound: split.next_bound,
            pieces: split
                .pieces
                .into_iter()
                .map(|p| HandedBack {
                    moves: p.unit.prefix,
                    f: p.f,
                })
                .collect(),
        },
    };
    let result = UnitResult {
        job: a.job,
        epoch: a.epoch,
        task: a.task,
        report,
        expanded: r.expanded,
        iterations: if a.iterate {
            r.iterations.iter().map(|i| (i.bound, i.expanded)).collect()
        } else {
            Vec::new()
        },
    };
    (result, again)
}

mod async_bounds;
mod basics;
mod checkpoints;
mod liars;
mod preemption;
mod prefetch;
mod tables;
mod whole_jobs;

use liars::*;
use whole_jobs::*;

fn korf_goal() -> Goal {
    Goal::blank_first(Shape::new(4, 4).unwrap())
}

fn four_by_four() -> Shape {
    Shape::new(4, 4).unwrap()
}

/// 4x4 5-5-5 pattern databases, built once per test binary (about a second).
fn pdb() -> PdbHeuristic {
    static PDB: OnceLock<PdbHeuristic> = OnceLock::new();
    PDB.get_or_init(|| {
        let partition = Partition::named(four_by_four(), "5-5-5").unwrap();
        PdbHeuristic::build(&partition, true, |_, _, _| {}).unwrap()
    })
    .clone()
}

/// A worker holding pattern databases for these shapes.
fn tables_for(shapes: &[Shape]) -> Capabilities {
    Capabilities {
        pdb_shapes: shapes.iter().copied().collect(),
        ..Capabilities::default()
    }
}

fn optimal(board: &Board) -> usize {
    let solver = Solver::new(korf_goal(), HeuristicKind::LinearConflict).unwrap();
    match solver.solve(board, &Limits::default()).unwrap().outcome {
        npuzzle_solver::SearchOutcome::Solved(p) => p.len(),
        other => panic!("{other:?}"),
    }
}

fn check_optimal(sim: &Sim, job: impl Into<JobId>, root: &Board) {
    let job = job.into();
    assert_optimal(root, &korf_goal(), &sim.solved_path(job), optimal(root));
}
