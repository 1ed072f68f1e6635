//! The Prometheus endpoint: the process's metrics in the text exposition format, over HTTP.
//!
//! The [`::metrics`] facade has one recorder per process, so there is one registry per
//! process, installed on first use by [`install`]. Every endpoint of the process serves it: a
//! coordinator and workers running in one process (`npuzzle cluster`, the tests) share it, and
//! their metric names do not overlap (`npuzzle_coordinator_*`, `npuzzle_worker_*`).
//!
//! Why not the exporter crate's own HTTP listener: it binds an address it is given and never
//! says which port it got (so `:0` cannot be used and reported), and each listener comes with a
//! fresh recorder of its own, of which only one can be the process's. [`MetricsListener`] is
//! bound by the caller, like the gRPC listener, and renders the one installed recorder with the
//! exporter's [`PrometheusHandle`], over the hyper that tonic already brings.

use std::convert::Infallible;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio_util::sync::CancellationToken;

/// Upper bounds (seconds) of the buckets of every `*_seconds` histogram: from a cache hit
/// (about 0.1 ms) to a long distributed search.
pub const SECONDS_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0, 300.0, 1800.0,
];

/// The Prometheus text format's content type.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How often histogram samples are folded into the registry when nobody scrapes.
const UPKEEP: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process's Prometheus recorder (once; later calls return the same handle). Until
/// it is installed, `metrics` macros record nothing, at almost no cost. If some other recorder
/// was installed first, the handle renders an empty registry and a warning is logged.
pub fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new();
        let builder = builder
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
            // Unreachable (the buckets are not empty); summaries instead of histograms then.
            .unwrap_or_else(|_| PrometheusBuilder::new());
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if let Err(e) = ::metrics::set_global_recorder(recorder) {
            tracing::warn!(error = %e, "another metrics recorder is installed; the npuzzle metrics endpoint will be empty");
        }
        handle
    })
}

/// A bound TCP listener for the metrics endpoint. Bind it where the address is known (a flag),
/// read [`local_addr`](Self::local_addr) (port 0 picks a free one), then [`serve`](Self::serve).
/// Clones share the socket.
#[derive(Clone, Debug)]
pub struct MetricsListener {
    listener: Arc<std::net::TcpListener>,
    address: SocketAddr,
}

/// Why the metrics endpoint stopped.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("metrics endpoint: {0}")]
    Io(#[from] io::Error),
}

impl MetricsListener {
    /// Binds `address` (e.g. `0.0.0.0:9090`, `127.0.0.1:0`).
    pub fn bind(address: impl ToSocketAddrs) -> io::Result<MetricsListener> {
        let listener = std::net::TcpListener::bind(address)?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        Ok(MetricsListener {
            listener: Arc::new(listener),
            address,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// Installs the recorder (see [`install`]) and answers `GET /metrics` with the process's
    /// metrics until `shutdown` fires. Other paths get 404, other methods 405.
    pub async fn serve(&self, shutdown: CancellationToken) -> Result<(), MetricsError> {
        let handle = install().clone();
        let listener = tokio::net::TcpListener::from_std(self.listener.try_clone()?)?;
        tracing::info!(address = %self.address, "metrics at http://{}/metrics", self.address);
        let mut upkeep = tokio::time::interval(UPKEEP);
        upkeep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let stream = tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                _ = upkeep.tick() => {
                    handle.run_upkeep();
                    continue;
                }
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // Out of file descriptors, or a connection reset before it was taken:
                        // neither ends the endpoint.
                        tracing::warn!(error = %e, "metrics endpoint: accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let handle = handle.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let response = respond(&handle, &request);
                    async move { Ok::<_, Infallible>(response) }
                });
                let served = hyper::server::conn::http1::Builder::new()
                    // A client that never finishes its request is dropped (30 s by default).
                    .timer(TokioTimer::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                if let Err(e) = served {
                    tracing::debug!(error = %e, "metrics endpoint: connection ended with an error");
                }
            });
        }
    }
}

fn respond(handle: &PrometheusHandle, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match (request.method(), request.uri().path()) {
        (&Method::GET | &Method::HEAD, "/metrics") => {
            (StatusCode::OK, TEXT_FORMAT, handle.render())
        }
        (_, "/metrics") => (
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "use GET\n".to_string(),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain",
            "npuzzle: the metrics are at /metrics\n".to_string(),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
