//! Operator commands: `npuzzle stats` (the cluster's state, from the coordinator's `Stats` RPC)
//! and `npuzzle health` (a `grpc.health.v1` check, with exit codes a container health probe
//! can use).

use std::fmt::Write as _;
use std::time::Duration;

use npuzzle_proto::security::{ClientSecurity, SecurityError};
use npuzzle_proto::v1;
use npuzzle_proto::v1::solver_client::SolverClient;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// Why the coordinator could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    #[error(transparent)]
    Settings(#[from] SecurityError),
    #[error("cannot reach the coordinator at {url}")]
    Connect {
        url: String,
        source: tonic::transport::Error,
    },
    #[error("no answer from the coordinator at {url} within {} ms", timeout.as_millis())]
    Timeout { url: String, timeout: Duration },
    #[error("the coordinator at {url} answered with an error: {}", status.message())]
    Call { url: String, status: tonic::Status },
}

/// An error and its causes on one line, each once: tonic's transport errors repeat themselves
/// ("tcp connect error: tcp connect error: …").
pub fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        let text = e.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}

async fn channel(
    url: &str,
    security: &ClientSecurity,
    timeout: Duration,
) -> Result<Channel, OpsError> {
    let endpoint = security.endpoint(url)?.connect_timeout(timeout);
    match tokio::time::timeout(timeout, endpoint.connect()).await {
        Ok(Ok(channel)) => Ok(channel),
        Ok(Err(source)) => Err(OpsError::Connect {
            url: url.to_string(),
            source,
        }),
        Err(_) => Err(OpsError::Timeout {
            url: url.to_string(),
            timeout,
        }),
    }
}

/// The coordinator's `Stats` (which needs the client token when the coordinator requires one).
pub async fn stats(
    url: &str,
    security: &ClientSecurity,
    timeout: Duration,
) -> Result<v1::StatsResponse, OpsError> {
    let mut client = SolverClient::with_interceptor(
        channel(url, security, timeout).await?,
        security.interceptor(),
    );
    let mut request = tonic::Request::new(v1::StatsRequest {});
    request.set_timeout(timeout);
    match tokio::time::timeout(timeout, client.stats(request)).await {
        Ok(Ok(r)) => Ok(r.into_inner()),
        Ok(Err(status)) => Err(OpsError::Call {
            url: url.to_string(),
            status,
        }),
        Err(_) => Err(OpsError::Timeout {
            url: url.to_string(),
            timeout,
        }),
    }
}

/// `Stats` as a few lines for a person.
pub fn stats_text(s: &v1::StatsResponse) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "workers         {}", s.workers);
    let _ = writeln!(out, "search threads  {} ({} busy)", s.slots, s.busy_slots);
    let _ = writeln!(
        out,
        "searches        {} running, {} work units queued",
        s.running_jobs, s.queue_depth
    );
    let _ = writeln!(
        out,
        "cache           {} entries; {} hits, {} misses ({:.1} % hits)",
        s.cache_entries,
        s.cache_hits,
        s.cache_misses,
        s.cache_hit_rate * 100.0
    );
    let _ = writeln!(
        out,
        "late nodes      {} (searched by units still running when their job ended)",
        s.late_nodes
    );
    out
}

/// `Stats` as one JSON object, with the proto's field names.
pub fn stats_json(s: &v1::StatsResponse) -> serde_json::Value {
    serde_json::json!({
        "workers": s.workers,
        "slots": s.slots,
        "busy_slots": s.busy_slots,
        "running_jobs": s.running_jobs,
        "queue_depth": s.queue_depth,
        "cache_entries": s.cache_entries,
        "cache_hits": s.cache_hits,
        "cache_misses": s.cache_misses,
        "cache_hit_rate": s.cache_hit_rate,
        "late_nodes": s.late_nodes,
    })
}

/// What a health check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// SERVING: exit 0.
    Serving,
    /// NOT_SERVING: exit 1.
    NotServing,
    /// Answered, but neither SERVING nor NOT_SERVING: an unknown service name, or a server
    /// without a health service. Exit 1.
    Unknown(String),
    /// No answer at all (nothing listens, refused, timed out): exit 2.
    Unreachable(String),
}

impl Health {
    /// 0 serving, 1 not serving or unknown, 2 unreachable.
    pub fn exit_code(&self) -> u8 {
        match self {
            Health::Serving => 0,
            Health::NotServing | Health::Unknown(_) => 1,
            Health::Unreachable(_) => 2,
        }
    }

    /// The status as grpc.health.v1 names it (`UNREACHABLE` when there was no answer).
    pub fn name(&self) -> &'static str {
        match self {
            Health::Serving => "SERVING",
            Health::NotServing => "NOT_SERVING",
            Health::Unknown(_) => "UNKNOWN",
            Health::Unreachable(_) => "UNREACHABLE",
        }
    }
}

/// Asks the coordinator's `grpc.health.v1.Health/Check` about `service` (`""`: the server as a
/// whole), giving up after `timeout` (connecting and asking). Health needs no token; `security`
/// matters for its TLS settings.
pub async fn health(
    url: &str,
    service: &str,
    security: &ClientSecurity,
    timeout: Duration,
) -> Health {
    let channel = match channel(url, security, timeout).await {
        Ok(c) => c,
        Err(e) => return Health::Unreachable(describe(&e)),
    };
    let mut client = HealthClient::new(channel);
    let mut request = tonic::Request::new(HealthCheckRequest {
        service: service.to_string(),
    });
    request.set_timeout(timeout);
    let answer = match tokio::time::timeout(timeout, client.check(request)).await {
        Ok(answer) => answer,
        Err(_) => {
            return Health::Unreachable(format!(
                "no answer from {url} within {} ms",
                timeout.as_millis()
            ));
        }
    };
    match answer {
        Ok(r) => match ServingStatus::try_from(r.into_inner().status) {
            Ok(ServingStatus::Serving) => Health::Serving,
            Ok(ServingStatus::NotServing) => Health::NotServing,
            Ok(other) => Health::Unknown(format!("{url} says {}", other.as_str_name())),
            Err(_) => Health::Unknown(format!("{url} answered an unknown status value")),
        },
        Err(status) => {
            let why = match status.code() {
                tonic::Code::NotFound => format!("no service named {service:?}"),
                tonic::Code::Unimplemented => "no grpc.health.v1 service".to_string(),
                _ => describe(&status),
            };
            let why = format!("{url}: {why}");
            match status.code() {
                tonic::Code::Unavailable
                | tonic::Code::DeadlineExceeded
                | tonic::Code::Cancelled => Health::Unreachable(why),
                _ => Health::Unknown(why),
            }
        }
    }
}
