//! `grpc.health.v1`: what the coordinator tells load balancers and probes.
//!
//! The statuses of `""` (the server as a whole), `npuzzle.v1.Solver` and `npuzzle.v1.Cluster`:
//!
//! - **NOT_SERVING while no worker is connected.** Only boards the coordinator solves itself
//!   (unsolvable, cached, small) could be answered; anything else would wait and end
//!   `UNAVAILABLE`. A load balancer should send clients elsewhere, and a container that has just
//!   started is not ready until a worker has joined. (`Stats` and the health service itself still
//!   answer.)
//! - **NOT_SERVING while draining**: from the moment the shutdown token fires until the server
//!   stops ([`Config::drain`](crate::Config::drain) later), so that load balancers stop sending
//!   requests before the port closes. Requests that still arrive are served.
//! - **SERVING** otherwise.
//!
//! `npuzzle.v1.Cluster` (where workers join) follows the same rule, so that a worker health
//! check says the same thing as a client's. Other names are `NOT_FOUND`, as the protocol says.
//! When the server stops, every status is removed, which ends open `Watch` streams (they would
//! otherwise hold the graceful shutdown open).

use std::time::Duration;

use npuzzle_proto::v1::cluster_server::ClusterServer;
use npuzzle_proto::v1::solver_server::SolverServer;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tonic::server::NamedService;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

use crate::scheduler_actor::Membership;
use crate::service::{ClusterService, SolverService};

/// Every name the health service answers for: the server as a whole, then each service.
pub const SERVICES: [&str; 3] = [
    "",
    <SolverServer<SolverService> as NamedService>::NAME,
    <ClusterServer<ClusterService> as NamedService>::NAME,
];

/// Sets every status to SERVING or NOT_SERVING.
pub async fn set(reporter: &HealthReporter, serving: bool) {
    let status = if serving {
        ServingStatus::Serving
    } else {
        ServingStatus::NotServing
    };
    for name in SERVICES {
        reporter.set_service_status(name, status).await;
    }
    metrics::gauge!(crate::metrics::SERVING).set(if serving { 1.0 } else { 0.0 });
}

/// Keeps the statuses up to date as workers join and leave, until `shutdown` fires; then
/// reports NOT_SERVING for `drain`, removes the statuses (ending `Watch` streams) and fires
/// `stop`, which stops the server, the scheduler's actor and the metrics endpoint. Returns at once
/// if `stop` fires first (the server failed).
pub async fn drive(
    mut reporter: HealthReporter,
    mut membership: watch::Receiver<Membership>,
    shutdown: CancellationToken,
    drain: Duration,
    stop: CancellationToken,
) {
    let mut serving = None;
    loop {
        let now = membership.borrow_and_update().workers > 0;
        if serving != Some(now) {
            set(&reporter, now).await;
            if serving.is_some() {
                tracing::info!(serving = now, "health status changed");
            }
            serving = Some(now);
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = stop.cancelled() => return,
            changed = membership.changed() => {
                if changed.is_err() {
                    // The actor is gone: nothing can be served any more.
                    set(&reporter, false).await;
                    tokio::select! {
                        _ = shutdown.cancelled() => break,
                        _ = stop.cancelled() => return,
                    }
                }
            }
        }
    }
    set(&reporter, false).await;
    if !drain.is_zero() {
        tracing::info!(
            seconds = drain.as_secs_f64(),
            "draining: health says NOT_SERVING until the server stops"
        );
        tokio::time::sleep(drain).await;
    }
    for name in SERVICES {
        reporter.clear_service_status(name).await;
    }
    stop.cancel();
}
