//! `npuzzle load`: many concurrent clients mixing cached, new, invalid and unsolvable boards
//! against a real coordinator and worker on loopback lose no answer and get only optimal paths;
//! past the coordinator's search limit they wait out its hint, retry, and still lose nothing;
//! and a coordinator that answers with detours, or not at all, fails the run.

use std::pin::Pin;
use std::time::Duration;

use crate::common::{npuzzle, one_worker};
use npuzzle_client::load::{self, LoadPlan, LoadReport};
use npuzzle_cluster::LocalCluster;
use npuzzle_proto::v1;
use npuzzle_proto::v1::solver_server::{Solver as SolverRpc, SolverServer};
use npuzzle_solver::{HeuristicKind, Limits, SearchOutcome, Shape, Solver};
use tokio_stream::Stream;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

/// A coordinator (with `config`) and one single-threaded worker on `127.0.0.1:0`.
async fn cluster(config: npuzzle_coordinator::Config) -> LocalCluster {
    LocalCluster::start(one_worker(config)).await.unwrap()
}

/// Every kind was sent, and answered as it must be: invalid requests with INVALID_ARGUMENT,
/// unsolvable boards as unsolvable, repeated boards from the cache.
fn assert_every_kind_answered_right(report: &LoadReport) {
    assert!(report.passed, "{report}");
    assert_eq!((report.lost, report.wrong), (0, 0), "{report}");
    for (kind, tally) in &report.kinds {
        assert!(tally.requests > 0, "no {kind} request was sent: {report}");
        assert_eq!(tally.ok, tally.requests, "{kind}: {report}");
        assert!(tally.latency_ms.is_some(), "{kind}: {report}");
    }
    let invalid = &report.kinds["invalid"];
    assert_eq!(
        report.answers.get("InvalidArgument"),
        Some(&invalid.requests)
    );
    let unsolvable = &report.kinds["unsolvable"];
    assert_eq!(report.answers.get("unsolvable"), Some(&unsolvable.requests));
    let cached = &report.kinds["cached"];
    assert_eq!(cached.cache_hits, cached.requests, "{report}");
    assert_eq!(report.not_sent, 0, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_load_of_many_clients_loses_nothing_and_every_path_is_optimal() {
    let cluster = cluster(npuzzle_coordinator::Config::default()).await;
    let url = cluster.url().to_string();
    let plan = LoadPlan {
        requests: 400,
        clients: 32,
        warm: 40,
        timeout: Duration::from_secs(20),
        ..LoadPlan::default()
    };
    let report = load::run(&url, &Default::default(), &plan).await.unwrap();
    assert_every_kind_answered_right(&report);
    assert_eq!(report.total.requests, 400);
    assert_eq!(report.connections, 32, "one connection per client");
    assert_eq!((report.warmup.requests, report.warmup.ok), (40, 40));
    let counted: usize = report.kinds.values().map(|t| t.requests).sum();
    assert_eq!(counted, 400);
    assert!(report.throughput_rps > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_search_limit_clients_retry_on_the_hint_and_still_lose_nothing() {
    let config = npuzzle_coordinator::Config {
        max_searches: 2,
        ..npuzzle_coordinator::Config::default()
    };
    let cluster = cluster(config).await;
    let url = cluster.url().to_string();
    // 15-puzzles that need a real search, so that 32 clients outrun the 2 permits.
    let plan = LoadPlan {
        shape: Shape::new(4, 4).unwrap(),
        walk: Some(30),
        requests: 200,
        clients: 32,
        connections: 8,
        warm: 20,
        mix: "cached=20,new=60,invalid=10,unsolvable=10".parse().unwrap(),
        seed: 7,
        timeout: Duration::from_secs(25),
        max_retry_wait: Duration::from_millis(20),
        ..LoadPlan::default()
    };
    let report = load::run(&url, &Default::default(), &plan).await.unwrap();
    assert_every_kind_answered_right(&report);
    assert!(
        report.kinds["new"].retries > 0,
        "no RESOURCE_EXHAUSTED came back: {report}"
    );
    // Answers that need no search are never refused.
    for kind in ["cached", "invalid", "unsolvable"] {
        assert_eq!(report.kinds[kind].retries, 0, "{kind}: {report}");
    }
}

#[test]
fn npuzzle_load_with_its_embedded_cluster_prints_a_passing_json_report() {
    let out = npuzzle(
        &[
            "load",
            "--requests",
            "150",
            "--clients",
            "8",
            "--warm",
            "20",
            "--threads",
            "1",
            "--json",
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("one JSON object");
    assert_eq!(report["passed"], true, "{report}");
    assert_eq!(report["lost"], 0);
    assert_eq!(report["wrong"], 0);
    assert_eq!(report["total"]["requests"], 150);
    for kind in ["cached", "new", "invalid", "unsolvable"] {
        assert!(
            report["kinds"][kind]["requests"].as_u64() > Some(0),
            "{kind}"
        );
        assert!(
            report["kinds"][kind]["latency_ms"]["p99"].is_number(),
            "{kind}"
        );
    }
}

#[test]
fn npuzzle_load_refuses_uniform_15_puzzles_it_could_not_check() {
    let out = npuzzle(&["load", "--size", "4x4", "--requests", "1"], "");
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("need --walk"), "{}", out.stderr);
    let mix = npuzzle(&["load", "--mix", "new=1,old=2"], "");
    assert_eq!(mix.code, 2);
    assert!(
        mix.stderr.contains("unknown kind \"old\""),
        "{}",
        mix.stderr
    );
}

/// How [`Liar`] answers solvable boards.
#[derive(Clone, Copy)]
enum Lie {
    /// A legal path two moves longer than the optimum (`UD` at the goal).
    Detour,
    /// `UNAVAILABLE`, for every request.
    Silence,
}

/// A `npuzzle.v1.Solver` that checks requests as the coordinator does but lies about solutions.
struct Liar(Lie);

#[tonic::async_trait]
impl SolverRpc for Liar {
    async fn solve(
        &self,
        request: Request<v1::SolveRequest>,
    ) -> Result<Response<v1::SolveResponse>, Status> {
        if let Lie::Silence = self.0 {
            return Err(Status::unavailable("not today"));
        }
        let r = request.into_inner();
        let invalid = |e: npuzzle_proto::WireError| Status::invalid_argument(e.to_string());
        let board = npuzzle_proto::board_from_wire(r.board.as_ref()).map_err(invalid)?;
        let goal =
            npuzzle_proto::goal_from_wire(r.goal.as_ref(), board.shape()).map_err(invalid)?;
        npuzzle_proto::heuristic_from_wire(r.heuristic).map_err(invalid)?;
        let solver = Solver::new(goal, HeuristicKind::best_for(board.shape())).unwrap();
        let answer = match solver.solve(&board, &Limits::default()).unwrap().outcome {
            SearchOutcome::Solved(path) => {
                let moves = format!("{}UD", npuzzle_proto::moves_to_wire(&path));
                v1::SolveResponse {
                    outcome: v1::Outcome::Solved as i32,
                    length: moves.len() as u32,
                    moves,
                    ..Default::default()
                }
            }
            _ => v1::SolveResponse {
                outcome: v1::Outcome::Unsolvable as i32,
                ..Default::default()
            },
        };
        Ok(Response::new(answer))
    }

    type SolveStreamStream = Pin<Box<dyn Stream<Item = Result<v1::SolveEvent, Status>> + Send>>;

    async fn solve_stream(
        &self,
        _: Request<v1::SolveRequest>,
    ) -> Result<Response<Self::SolveStreamStream>, Status> {
        Err(Status::unimplemented("no streams here"))
    }

    async fn stats(
        &self,
        _: Request<v1::StatsRequest>,
    ) -> Result<Response<v1::StatsResponse>, Status> {
        Ok(Response::new(v1::StatsResponse {
            workers: 1,
            slots: 1,
            ..Default::default()
        }))
    }

    async fn submit_job(
        &self,
        _: Request<v1::SolveRequest>,
    ) -> Result<Response<v1::JobStatus>, Status> {
        Err(Status::unimplemented("no jobs here"))
    }

    async fn get_job(&self, _: Request<v1::JobRequest>) -> Result<Response<v1::JobStatus>, Status> {
        Err(Status::unimplemented("no jobs here"))
    }

    type WatchJobStream = Pin<Box<dyn Stream<Item = Result<v1::JobStatus, Status>> + Send>>;

    async fn watch_job(
        &self,
        _: Request<v1::JobRequest>,
    ) -> Result<Response<Self::WatchJobStream>, Status> {
        Err(Status::unimplemented("no jobs here"))
    }

    async fn cancel_job(
        &self,
        _: Request<v1::JobRequest>,
    ) -> Result<Response<v1::JobStatus>, Status> {
        Err(Status::unimplemented("no jobs here"))
    }

    async fn list_jobs(
        &self,
        _: Request<v1::ListJobsRequest>,
    ) -> Result<Response<v1::ListJobsResponse>, Status> {
        Err(Status::unimplemented("no jobs here"))
    }
}

/// Serves a [`Liar`] on `127.0.0.1:0` from its own thread until the token fires.
fn serve_liar(lie: Lie) -> (String, CancellationToken) {
    let stop = CancellationToken::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let token = stop.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(format!("http://{}", listener.local_addr().unwrap()))
                .unwrap();
            tonic::transport::Server::builder()
                .add_service(SolverServer::new(Liar(lie)))
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::TcpListenerStream::new(listener),
                    token.cancelled(),
                )
                .await
                .unwrap();
        });
    });
    (rx.recv().unwrap(), stop)
}

fn load_against(url: &str) -> (i32, serde_json::Value) {
    let out = npuzzle(
        &[
            "load",
            "--coordinator",
            url,
            "--requests",
            "60",
            "--clients",
            "4",
            "--warm",
            "10",
            "--timeout-ms",
            "5000",
            "--json",
        ],
        "",
    );
    let report = serde_json::from_str(&out.stdout).expect("one JSON object");
    (out.code, report)
}

#[test]
fn detours_and_missing_answers_are_counted_and_fail_the_run() {
    let (url, _stop) = serve_liar(Lie::Detour);
    let (code, report) = load_against(&url);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["passed"], false);
    assert_eq!(report["lost"], 0, "{report}");
    let kind = |k: &str, field: &str| report["kinds"][k][field].as_u64().unwrap();
    // Every path is legal and reaches the goal, and every one is 2 moves too long.
    let solvable = 10 + kind("cached", "requests") + kind("new", "requests");
    assert_eq!(report["wrong"].as_u64(), Some(solvable), "{report}");
    assert_eq!(kind("invalid", "ok"), kind("invalid", "requests"));
    assert_eq!(kind("unsolvable", "ok"), kind("unsolvable", "requests"));
    let failure = report["failures"][0].as_str().unwrap();
    assert!(failure.starts_with("wrong:"), "{failure}");
    assert!(failure.contains("the optimum is"), "{failure}");

    let (url, _stop) = serve_liar(Lie::Silence);
    let (code, report) = load_against(&url);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["wrong"], 0, "{report}");
    assert_eq!(report["lost"].as_u64(), Some(70), "{report}");
    assert_eq!(report["answers"]["Unavailable"], 60);
}
