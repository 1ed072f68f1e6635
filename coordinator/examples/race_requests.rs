//! Racing requests (bench/hostile.sh): `--rounds` times, a request with `timeout_ms` =
//! `--first-ms` on a hard board, and an identical one (`timeout_ms` = `--second-ms`) sent
//! `--gap-ms` later, so that it arrives about when the first one gives up. Counts the outcomes of
//! each; a second request must never end CANCELLED (it is not the one that gave up).
//!
//! `cargo run --release -p npuzzle-coordinator --example race_requests -- \
//!     --coordinator http://127.0.0.1:50051`

use std::collections::BTreeMap;
use std::time::Duration;

use clap::Parser;
use npuzzle_proto::v1;
use npuzzle_proto::v1::solver_client::SolverClient;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    coordinator: String,
    #[arg(long, default_value_t = 100)]
    rounds: usize,
    #[arg(long, default_value_t = 40)]
    first_ms: u64,
    #[arg(long, default_value_t = 40)]
    gap_ms: u64,
    #[arg(long, default_value_t = 200)]
    second_ms: u64,
    /// A hard board for the blank-first goal (Korf's #88: 65 moves).
    #[arg(long, default_value = "15 2 12 11 14 13 9 5 1 3 8 7 0 10 6 4")]
    board: String,
}

fn outcome(r: Result<tonic::Response<v1::SolveResponse>, tonic::Status>) -> String {
    match r {
        Ok(r) => format!(
            "{:?}",
            v1::Outcome::try_from(r.into_inner().outcome).unwrap_or(v1::Outcome::Unspecified)
        ),
        Err(s) => format!("status:{:?}", s.code()),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let tiles: Vec<u32> = args
        .board
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let request = |timeout_ms| v1::SolveRequest {
        board: Some(v1::Board {
            width: 4,
            height: 4,
            tiles: tiles.clone(),
        }),
        goal: Some(v1::Goal {
            kind: v1::GoalKind::BlankFirst as i32,
            tiles: vec![],
        }),
        timeout_ms,
        ..Default::default()
    };
    let client = SolverClient::connect(args.coordinator.clone()).await?;
    let mut firsts = BTreeMap::<String, u64>::new();
    let mut seconds = BTreeMap::<String, u64>::new();
    for _ in 0..args.rounds {
        let mut a = client.clone();
        let first = request(args.first_ms);
        let one = tokio::spawn(async move { outcome(a.solve(first).await) });
        tokio::time::sleep(Duration::from_millis(args.gap_ms)).await;
        let mut b = client.clone();
        let second = request(args.second_ms);
        let two = tokio::spawn(async move { outcome(b.solve(second).await) });
        *firsts.entry(one.await?).or_default() += 1;
        *seconds.entry(two.await?).or_default() += 1;
    }
    println!("first requests:  {firsts:?}");
    println!("second requests: {seconds:?}");
    println!(
        "second requests CANCELLED: {}",
        seconds.get("Cancelled").copied().unwrap_or(0)
    );
    Ok(())
}
