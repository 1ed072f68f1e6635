//! The scheduler's actor: one task owns the [`Scheduler`] and carries out its commands, sending
//! assignments and cancels down each worker's stream and progress to each job's driver. Every
//! other task talks to it through a [`SchedulerHandle`].

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use npuzzle_proto::{board_to_wire, goal_to_wire, heuristic_to_wire, moves_to_wire, v1};
use npuzzle_solver::{HeuristicKind, Shape};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;
use tonic::Status;

use crate::quarantine::{Origin, Quarantine};
use crate::scheduler::{
    Assignment, Capabilities, Checkpoint, Command, DisconnectReason, JobId, JobOutcome, JobSpec,
    JobStats, Scheduler, SchedulerConfig, UnitResult, WorkerId,
};

/// What a worker's outbound stream carries.
pub type WorkerSender = mpsc::UnboundedSender<Result<v1::CoordinatorMessage, Status>>;

/// What the actor tells a job's driver.
#[derive(Clone, Debug)]
pub enum JobEvent {
    Progress {
        bound: u32,
        nodes: u64,
        units_done: usize,
        units_total: usize,
        finished: bool,
    },
    Finished {
        outcome: JobOutcome,
        stats: JobStats,
    },
}

/// A snapshot of the cluster for `Stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterStats {
    pub workers: usize,
    pub slots: usize,
    pub busy_slots: usize,
    pub running_jobs: usize,
    pub queue_depth: usize,
    pub late_nodes: u64,
}

/// One connected worker, as the console shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct WorkerView {
    pub id: WorkerId,
    /// The name its hello gave (cut to 64 characters) and its peer address.
    pub name: String,
    pub address: Option<String>,
    pub slots: usize,
    pub busy_slots: usize,
    /// Nodes it reported since it joined (a rate is the difference of two snapshots).
    pub nodes: u64,
    /// Shapes it holds pattern databases for (`4x4`, …).
    pub tables: Vec<String>,
    /// When it joined, in milliseconds since the Unix epoch.
    pub connected_since_ms: u64,
}

/// Who is connected, as request handlers need to know it without asking the actor: published
/// after every event that changes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Membership {
    /// Workers connected now.
    pub workers: usize,
    /// Shapes some connected worker holds pattern databases for.
    pub pdb_shapes: BTreeSet<Shape>,
}

impl Membership {
    /// Whether some connected worker can search units of `shape` with `heuristic`.
    pub fn can_serve(&self, heuristic: HeuristicKind, shape: Shape) -> bool {
        self.workers > 0 && (heuristic != HeuristicKind::Pdb || self.pdb_shapes.contains(&shape))
    }
}

enum Event {
    WorkerJoined {
        id: WorkerId,
        origin: Origin,
        slots: usize,
        capabilities: Capabilities,
        tx: WorkerSender,
    },
    WorkerLeft {
        id: WorkerId,
    },
    Result {
        worker: WorkerId,
        result: UnitResult,
    },
    Heartbeat {
        worker: WorkerId,
    },
    Submit {
        spec: JobSpec,
        events: mpsc::UnboundedSender<JobEvent>,
    },
    Cancel {
        job: JobId,
    },
    Stats {
        reply: oneshot::Sender<ClusterStats>,
    },
    Checkpoint {
        job: JobId,
        reply: oneshot::Sender<Option<Checkpoint>>,
    },
    AskBack {
        job: JobId,
        older_than: Duration,
    },
    Workers {
        reply: oneshot::Sender<Vec<WorkerView>>,
    },
}

/// A cheap, cloneable way to reach the actor.
#[derive(Clone)]
pub struct SchedulerHandle {
    tx: mpsc::UnboundedSender<Event>,
    ids: Arc<AtomicU64>,
    membership: watch::Receiver<Membership>,
    quarantine: Arc<Mutex<Quarantine>>,
}

impl SchedulerHandle {
    /// A fresh id for a worker or a job.
    pub fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// Workers connected now.
    pub fn workers(&self) -> usize {
        self.membership.borrow().workers
    }

    /// Who is connected now, and what they serve.
    pub fn membership(&self) -> Membership {
        self.membership.borrow().clone()
    }

    /// Notified whenever the membership changes.
    pub fn watch_membership(&self) -> watch::Receiver<Membership> {
        self.membership.clone()
    }

    /// Workers dropped for misbehaving, and claims struck: consulted at each hello, filled by
    /// the actor as it drops workers.
    pub fn quarantine(&self) -> MutexGuard<'_, Quarantine> {
        lock(&self.quarantine)
    }

    pub fn worker_joined(
        &self,
        id: WorkerId,
        origin: Origin,
        slots: usize,
        capabilities: Capabilities,
        tx: WorkerSender,
    ) {
        let _ = self.tx.send(Event::WorkerJoined {
            id,
            origin,
            slots,
            capabilities,
            tx,
        });
    }

    pub fn worker_left(&self, id: WorkerId) {
        let _ = self.tx.send(Event::WorkerLeft { id });
    }

    pub fn result(&self, worker: WorkerId, result: UnitResult) {
        let _ = self.tx.send(Event::Result { worker, result });
    }

    pub fn heartbeat(&self, worker: WorkerId) {
        let _ = self.tx.send(Event::Heartbeat { worker });
    }

    pub fn submit(&self, spec: JobSpec, events: mpsc::UnboundedSender<JobEvent>) {
        let _ = self.tx.send(Event::Submit { spec, events });
    }

    pub fn cancel(&self, job: JobId) {
        let _ = self.tx.send(Event::Cancel { job });
    }

    pub async fn stats(&self) -> ClusterStats {
        let (reply, rx) = oneshot::channel();
        let _ = self.tx.send(Event::Stats { reply });
        rx.await.unwrap_or_default()
    }

    /// Asks job `job`'s tasks running for `older_than` or longer for the rest of their bound
    /// (see [`Scheduler::ask_back_for_checkpoint`]).
    pub fn ask_back_for_checkpoint(&self, job: JobId, older_than: Duration) {
        let _ = self.tx.send(Event::AskBack { job, older_than });
    }

    /// Job `job`'s proven progress now (see [`Scheduler::checkpoint`]).
    pub async fn checkpoint(&self, job: JobId) -> Option<Checkpoint> {
        let (reply, rx) = oneshot::channel();
        let _ = self.tx.send(Event::Checkpoint { job, reply });
        rx.await.ok().flatten()
    }

    /// The workers connected now, in the order they joined.
    pub async fn workers_view(&self) -> Vec<WorkerView> {
        let (reply, rx) = oneshot::channel();
        let _ = self.tx.send(Event::Workers { reply });
        rx.await.unwrap_or_default()
    }
}

/// Starts the actor; it runs until `shutdown` fires. With `metrics`, it exports the cluster's
/// gauges and the scheduler's totals after every event (see [`crate::metrics`]).
/// The quarantine's lock: every step on it is one map operation, so a poisoned lock is used as
/// it is.
fn lock(q: &Mutex<Quarantine>) -> MutexGuard<'_, Quarantine> {
    q.lock().unwrap_or_else(PoisonError::into_inner)
}

pub fn spawn(
    config: SchedulerConfig,
    quarantine_for: Duration,
    tick: Duration,
    metrics: bool,
    shutdown: CancellationToken,
) -> SchedulerHandle {
    let (tx, rx) = mpsc::unbounded_channel();
    let (membership_tx, membership_rx) = watch::channel(Membership::default());
    let quarantine = Arc::new(Mutex::new(Quarantine::new(quarantine_for)));
    let actor = Actor {
        scheduler: Scheduler::new(config),
        workers: HashMap::new(),
        jobs: HashMap::new(),
        membership: membership_tx,
        metrics,
        quarantine: Arc::clone(&quarantine),
    };
    tokio::spawn(run(actor, tick, rx, shutdown));
    SchedulerHandle {
        tx,
        ids: Arc::new(AtomicU64::new(1)),
        membership: membership_rx,
        quarantine,
    }
}

/// A connected worker, as the actor knows it.
struct Member {
    tx: WorkerSender,
    origin: Origin,
    /// For [`WorkerView`]: its slots and tables, when it joined, the nodes it reported.
    slots: usize,
    tables: Vec<String>,
    joined: std::time::SystemTime,
    nodes: u64,
}

struct Actor {
    scheduler: Scheduler,
    workers: HashMap<WorkerId, Member>,
    jobs: HashMap<JobId, mpsc::UnboundedSender<JobEvent>>,
    membership: watch::Sender<Membership>,
    /// Export metrics after each event (only when an endpoint serves them).
    metrics: bool,
    quarantine: Arc<Mutex<Quarantine>>,
}

async fn run(
    mut actor: Actor,
    tick: Duration,
    mut rx: mpsc::UnboundedReceiver<Event>,
    shutdown: CancellationToken,
) {
    let mut ticker = tokio::time::interval(tick);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = ticker.tick() => {
                let commands = actor.scheduler.tick(Instant::now());
                actor.carry_out(commands);
            }
            event = rx.recv() => match event {
                Some(e) => actor.handle(e),
                None => break,
            },
        }
    }
    // Dropping the worker senders ends their streams, so the server can shut down.
}

impl Actor {
    fn handle(&mut self, event: Event) {
        let now = Instant::now();
        let commands = match event {
            Event::WorkerJoined {
                id,
                origin,
                slots,
                capabilities,
                tx,
            } => {
                tracing::info!(worker = id.0, slots, pdb_shapes = ?capabilities.pdb_shapes, "worker joined");
                let member = Member {
                    tx,
                    origin,
                    slots,
                    tables: capabilities
                        .pdb_shapes
                        .iter()
                        .map(|s| s.to_string())
                        .collect(),
                    joined: std::time::SystemTime::now(),
                    nodes: 0,
                };
                self.workers.insert(id, member);
                self.scheduler.add_worker(id, slots, capabilities, now)
            }
            Event::WorkerLeft { id } => {
                if self.workers.remove(&id).is_some() {
                    tracing::info!(worker = id.0, "worker left");
                }
                self.scheduler.remove_worker(id)
            }
            Event::Result { worker, result } => {
                if self.metrics {
                    crate::metrics::nodes("workers", result.expanded);
                }
                if let Some(member) = self.workers.get_mut(&worker) {
                    member.nodes = member.nodes.saturating_add(result.expanded);
                }
                self.scheduler.on_result(worker, result, now)
            }
            Event::Heartbeat { worker } => {
                self.scheduler.heartbeat(worker, now);
                Vec::new()
            }
            Event::Submit { spec, events } => {
                self.jobs.insert(spec.id, events);
                self.scheduler.submit(spec)
            }
            Event::Cancel { job } => self.scheduler.cancel(job),
            Event::Stats { reply } => {
                let _ = reply.send(self.stats());
                Vec::new()
            }
            Event::AskBack { job, older_than } => {
                self.scheduler.ask_back_for_checkpoint(job, older_than, now)
            }
            Event::Checkpoint { job, reply } => {
                let _ = reply.send(self.scheduler.checkpoint(job));
                Vec::new()
            }
            Event::Workers { reply } => {
                let _ = reply.send(self.workers_view());
                Vec::new()
            }
        };
        self.carry_out(commands);
    }

    fn stats(&self) -> ClusterStats {
        ClusterStats {
            workers: self.scheduler.workers(),
            slots: self.scheduler.slots(),
            busy_slots: self.scheduler.busy_slots(),
            running_jobs: self.scheduler.running_jobs(),
            queue_depth: self.scheduler.queue_depth(),
            late_nodes: self.scheduler.late_nodes(),
        }
    }

    fn workers_view(&self) -> Vec<WorkerView> {
        let mut views: Vec<WorkerView> = self
            .workers
            .iter()
            .map(|(&id, m)| WorkerView {
                id,
                name: m.origin.name.clone(),
                address: m.origin.address.map(|a| a.to_string()),
                slots: m.slots,
                busy_slots: self.scheduler.busy_slots_of(id),
                nodes: m.nodes,
                tables: m.tables.clone(),
                connected_since_ms: m
                    .joined
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64),
            })
            .collect();
        views.sort_unstable_by_key(|w| w.id);
        views
    }

    fn carry_out(&mut self, commands: Vec<Command>) {
        for command in commands {
            match command {
                Command::Assign { worker, assignment } => {
                    let message = v1::CoordinatorMessage {
                        message: Some(v1::coordinator_message::Message::Assign(to_wire(
                            &assignment,
                        ))),
                    };
                    let sent = self
                        .workers
                        .get(&worker)
                        .is_some_and(|m| m.tx.send(Ok(message)).is_ok());
                    if !sent {
                        // The stream is gone: the worker is lost and its units go back.
                        self.workers.remove(&worker);
                        let more = self.scheduler.remove_worker(worker);
                        self.carry_out(more);
                    }
                }
                Command::Yield {
                    worker,
                    job,
                    epoch,
                    task,
                    after_nodes,
                } => {
                    if let Some(Member { tx, .. }) = self.workers.get(&worker) {
                        let _ = tx.send(Ok(v1::CoordinatorMessage {
                            message: Some(v1::coordinator_message::Message::YieldUnit(
                                v1::YieldUnit {
                                    job: job.0,
                                    epoch,
                                    unit: task.0,
                                    after_nodes,
                                },
                            )),
                        }));
                    }
                }
                Command::Cancel { worker, job } => {
                    if let Some(Member { tx, .. }) = self.workers.get(&worker) {
                        let _ = tx.send(Ok(v1::CoordinatorMessage {
                            message: Some(v1::coordinator_message::Message::Cancel(
                                v1::CancelJob { job: job.0 },
                            )),
                        }));
                    }
                }
                Command::Disconnect { worker, reason } => {
                    if let Some(Member { tx, origin, .. }) = self.workers.remove(&worker) {
                        if matches!(
                            reason,
                            DisconnectReason::Failing | DisconnectReason::ForgedResult
                        ) {
                            let mut quarantine = lock(&self.quarantine);
                            quarantine.add(&origin, Instant::now());
                            if !quarantine.duration().is_zero() {
                                tracing::warn!(
                                    worker = worker.0,
                                    origin = %origin,
                                    seconds = quarantine.duration().as_secs(),
                                    "worker quarantined: its joins are refused for a while"
                                );
                            }
                        }
                        let status = match reason {
                            DisconnectReason::LeaseExpired => {
                                tracing::warn!(
                                    worker = worker.0,
                                    "worker lease expired; closing its stream"
                                );
                                tonic::Status::unavailable(
                                    "lease expired (no message within the lease timeout); reconnect",
                                )
                            }
                            DisconnectReason::Failing => {
                                tracing::warn!(
                                    worker = worker.0,
                                    "worker failed unit after unit; closing its stream"
                                );
                                tonic::Status::failed_precondition(
                                    "this worker failed, refused or cancelled too many units in a row and was dropped; check its logs",
                                )
                            }
                            DisconnectReason::ForgedResult => {
                                tracing::warn!(
                                    worker = worker.0,
                                    "worker sent a path that does not check out; closing its stream"
                                );
                                tonic::Status::failed_precondition(
                                    "a reported path does not reach the goal or is longer than the bound; this worker was dropped",
                                )
                            }
                        };
                        let _ = tx.send(Err(status));
                    }
                }
                Command::Revoked { worker, shape } => {
                    if let Some(Member { origin, .. }) = self.workers.get(&worker) {
                        lock(&self.quarantine).revoke(origin, shape, Instant::now());
                    }
                }
                Command::Progress {
                    job,
                    bound,
                    nodes,
                    units_done,
                    units_total,
                    finished,
                } => {
                    if let Some(tx) = self.jobs.get(&job) {
                        let _ = tx.send(JobEvent::Progress {
                            bound,
                            nodes,
                            units_done,
                            units_total,
                            finished,
                        });
                    }
                }
                Command::Finish {
                    job,
                    outcome,
                    stats,
                } => {
                    if let Some(tx) = self.jobs.remove(&job) {
                        let _ = tx.send(JobEvent::Finished { outcome, stats });
                    }
                }
            }
        }
        let now = Membership {
            workers: self.workers.len(),
            pdb_shapes: self.scheduler.pdb_shapes(),
        };
        self.membership.send_if_modified(|m| {
            if *m == now {
                return false;
            }
            *m = now;
            true
        });
        if self.metrics {
            let (stats, totals) = (self.stats(), self.scheduler.totals());
            crate::metrics::publish_cluster(&crate::metrics::ClusterGauges {
                workers: stats.workers,
                slots: stats.slots,
                busy_slots: stats.busy_slots,
                queued_units: stats.queue_depth,
                running_jobs: stats.running_jobs,
                units_assigned: totals.units_assigned,
                units_split: totals.units_split,
                units_requeued: totals.units_requeued,
            });
        }
    }
}

fn to_wire(a: &Assignment) -> v1::Assignment {
    v1::Assignment {
        job: a.job.0,
        epoch: a.epoch,
        unit: a.task.0,
        board: Some(board_to_wire(&a.work.board)),
        goal: Some(goal_to_wire(&a.goal)),
        g: a.work.g,
        last_move: a
            .work
            .last
            .map(|m| m.letter().to_string())
            .unwrap_or_default(),
        bound: a.bound,
        heuristic: heuristic_to_wire(a.heuristic) as i32,
        node_budget: a.node_budget,
        iterate: a.iterate,
        recent_moves: moves_to_wire(&a.work.recent_moves()),
        weight_hundredths: a.weight.hundredths(),
    }
}
