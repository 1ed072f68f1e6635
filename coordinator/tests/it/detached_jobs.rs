//! Detached jobs (`SubmitJob`, `GetJob`, `WatchJob`, `CancelJob`, `ListJobs`): a search goes
//! on after the call that submitted it has ended, any client reads its answer by id, the same
//! puzzle keeps its id, a job waits for workers however long none is connected, a cancel stops
//! the search, and bad ids and bad input are refused.

use std::time::Duration;

use crate::common::{GoalSpec, TestCluster, assert_optimal, eager_config, korf, request};
use npuzzle_cluster::testing::eventually;
use npuzzle_proto::v1;

/// Every state `WatchJob` sends for `id`, to the final one.
async fn watch_to_the_end(
    client: &mut npuzzle_cluster::Coordinator,
    id: &str,
) -> Vec<v1::JobStatus> {
    let mut stream = client
        .watch_job(v1::JobRequest { id: id.into() })
        .await
        .unwrap()
        .into_inner();
    let mut states = Vec::new();
    while let Some(status) = stream.message().await.unwrap() {
        states.push(status);
    }
    states
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_on_after_its_caller_leaves_and_any_client_reads_its_answer() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(2).await;
    let (_, optimal, tiles) = korf(&[42]).remove(0);
    let id = {
        // The submitting client goes away as soon as it has the id.
        let mut submitter = cluster.client().await;
        let job = submitter
            .submit_job(request(&tiles, v1::GoalKind::BlankFirst))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(job.id.len(), 16, "{job:?}");
        assert!(
            job.state == v1::JobState::Running as i32 || job.state == v1::JobState::Done as i32,
            "{job:?}"
        );
        job.id
    };
    let mut reader = cluster.client().await;
    let states = watch_to_the_end(&mut reader, &id).await;
    let last = states.last().unwrap();
    assert_eq!(last.state, v1::JobState::Done as i32, "{states:?}");
    assert!(
        states[..states.len() - 1]
            .iter()
            .all(|s| s.state == v1::JobState::Running as i32),
        "{states:?}"
    );
    let result = last.result.as_ref().unwrap();
    assert_eq!(
        (result.outcome, result.length as usize),
        (v1::Outcome::Solved as i32, optimal)
    );
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &result.moves, optimal);

    // GetJob reads the same; the same puzzle submitted again is the same job, answered.
    let got = reader
        .get_job(v1::JobRequest { id: id.clone() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((got.state, &got.result), (last.state, &last.result));
    let again = reader
        .submit_job(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (again.id.as_str(), again.state),
        (id.as_str(), v1::JobState::Done as i32)
    );
    let listed = reader
        .list_jobs(v1::ListJobsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(listed.jobs.iter().any(|j| j.id == id), "{listed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_job_says_so_and_its_search_stops() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(1).await;
    let mut client = cluster.client().await;
    // Korf's #88 with Manhattan distance alone: far longer than this test.
    let (_, _, tiles) = korf(&[88]).remove(0);
    let submitted = v1::SolveRequest {
        heuristic: v1::Heuristic::Manhattan as i32,
        ..request(&tiles, v1::GoalKind::BlankFirst)
    };
    let job = client.submit_job(submitted).await.unwrap().into_inner();
    assert_eq!(job.state, v1::JobState::Running as i32, "{job:?}");
    eventually(
        Duration::from_secs(30),
        Duration::from_millis(50),
        "the job's search to start",
        || {
            let mut c = client.clone();
            async move {
                let stats = c.stats(v1::StatsRequest {}).await.ok()?.into_inner();
                (stats.running_jobs > 0).then_some(())
            }
        },
    )
    .await;
    let cancelled = client
        .cancel_job(v1::JobRequest { id: job.id.clone() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(cancelled.state, v1::JobState::Cancelled as i32);
    let states = watch_to_the_end(&mut client, &job.id).await;
    assert_eq!(
        states.iter().map(|s| s.state).collect::<Vec<_>>(),
        [v1::JobState::Cancelled as i32]
    );
    eventually(
        Duration::from_secs(30),
        Duration::from_millis(50),
        "the cancelled job's search to stop",
        || {
            let mut c = client.clone();
            async move {
                let stats = c.stats(v1::StatsRequest {}).await.ok()?.into_inner();
                (stats.running_jobs == 0 && stats.busy_slots == 0).then_some(())
            }
        },
    )
    .await;
}

#[tokio::test]
async fn bad_ids_and_bad_input_are_refused_with_what_is_wrong() {
    let cluster = TestCluster::start(eager_config()).await;
    let mut client = cluster.client().await;
    let err = client
        .get_job(v1::JobRequest {
            id: "not an id".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("16 hexadecimal digits"), "{err:?}");
    let err = client
        .watch_job(v1::JobRequest {
            id: "0123456789abcdef".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound, "{err:?}");
    let err = client
        .cancel_job(v1::JobRequest {
            id: "0123456789abcdef".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound, "{err:?}");
    let err = client
        .submit_job(v1::SolveRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    // An unsolvable board is a job done at once, with nothing searched.
    let job = client
        .submit_job(request(
            "2 1 3 4 5 6 7 8 9 10 11 12 13 14 15 0",
            v1::GoalKind::BlankLast,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(job.state, v1::JobState::Done as i32);
    assert_eq!(
        job.result.map(|r| r.outcome),
        Some(v1::Outcome::Unsolvable as i32)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_waits_for_a_worker_past_the_time_a_call_would() {
    // eager_config gives up on a call after 2 s without a worker; the job waits 3 s for one.
    let mut cluster = TestCluster::start(eager_config()).await;
    let mut client = cluster.client().await;
    let (_, optimal, tiles) = korf(&[42]).remove(0);
    let job = client
        .submit_job(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let waiting = client
        .get_job(v1::JobRequest { id: job.id.clone() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(waiting.state, v1::JobState::Running as i32, "{waiting:?}");
    cluster.add_worker(2).await;
    let states = watch_to_the_end(&mut client, &job.id).await;
    let last = states.last().unwrap();
    assert_eq!(last.state, v1::JobState::Done as i32, "{states:?}");
    let result = last.result.as_ref().unwrap();
    assert_eq!(result.length as usize, optimal);
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &result.moves, optimal);
}
