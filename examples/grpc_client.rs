//! Calling npuzzle from Rust with the generated gRPC client: `Solve`, then `SolveStream`.
//!
//! ```text
//! npuzzle cluster &                        # a coordinator and a worker on 127.0.0.1:50051
//! cargo run -p npuzzle-client --example grpc_client -- http://127.0.0.1:50051
//! cargo run -p npuzzle-client --example grpc_client  # no URL: starts its own cluster
//! ```

use npuzzle_proto::v1::{self, solve_event::Event, solver_client::SolverClient};

/// Korf's instance #2 (his goal: blank first, 0 1 2 … 15): 55 moves.
const BOARD: [u32; 16] = [13, 5, 4, 10, 9, 12, 8, 14, 2, 3, 7, 1, 0, 15, 11, 6];

fn request() -> v1::SolveRequest {
    v1::SolveRequest {
        board: Some(v1::Board {
            width: 4,
            height: 4,
            tiles: BOARD.to_vec(),
        }),
        goal: Some(v1::Goal {
            kind: v1::GoalKind::BlankFirst as i32,
            tiles: vec![],
        }),
        // Unset fields: the strongest heuristic, no timeout, cache allowed.
        ..Default::default()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Without a URL, run a coordinator and a worker in this process (what `npuzzle` does).
    let embedded;
    let url = match std::env::args().nth(1) {
        Some(url) => url,
        None => {
            let settings = npuzzle_client::engine::Settings::default();
            let options = npuzzle_client::remote::embedded(2, &settings, None);
            embedded = npuzzle_cluster::LocalCluster::start(options).await?;
            embedded.url().to_string()
        }
    };
    let mut client = SolverClient::connect(url).await?;

    // One answer.
    let answer = client.solve(request()).await?.into_inner();
    println!(
        "Solve: {:?}, {} moves {} ({} nodes, {} units, cached: {})",
        answer.outcome(),
        answer.length,
        answer.moves,
        answer.nodes,
        answer.units,
        answer.cached
    );

    // The same with progress; skip the cache so that there is a search to watch.
    let mut events = client
        .solve_stream(v1::SolveRequest {
            skip_cache: true,
            ..request()
        })
        .await?
        .into_inner();
    while let Some(event) = events.message().await? {
        match event.event {
            Some(Event::Queued(q)) => println!("queued as job {}", q.job),
            Some(Event::Bound(b)) if b.finished => {
                println!("bound {} done: {} nodes, no solution", b.bound, b.nodes)
            }
            Some(Event::Bound(b)) => {
                println!("bound {} started ({} units)", b.bound, b.units_total)
            }
            Some(Event::Result(r)) => println!("result: {} moves {}", r.length, r.moves),
            None => {}
        }
    }
    Ok(())
}
