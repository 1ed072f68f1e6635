//! Reaching a coordinator: one connection, carrying the client token, for the embedded engine,
//! the command line's `--coordinator` and the join wait alike.

use std::time::Duration;

use npuzzle_proto::security::{AttachToken, ClientSecurity, SecurityError, tls_failure};
use npuzzle_proto::v1::solver_client::SolverClient;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

/// A connection to a coordinator's `npuzzle.v1.Solver`, every call carrying the client token
/// (if any).
pub type Coordinator = SolverClient<InterceptedService<Channel, AttachToken>>;

/// Why no connection to the coordinator was made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    Settings(#[from] SecurityError),
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
}

/// Connects to a coordinator with `security` (its client token, and for `https://` the CA to
/// verify it with), retrying briefly (an embedded one may still be starting). A TLS failure
/// (the certificate does not verify) is not retried.
pub async fn connect(url: &str, security: &ClientSecurity) -> Result<Coordinator, ConnectError> {
    let endpoint = security
        .endpoint(url)?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true);
    let client = |channel| {
        SolverClient::with_interceptor(channel, security.interceptor())
            .max_decoding_message_size(16 << 20)
            .max_encoding_message_size(16 << 20)
    };
    let mut last = None;
    for _ in 0..20 {
        match endpoint.connect().await {
            Ok(channel) => return Ok(client(channel)),
            Err(e) if tls_failure(&e).is_some() => return Err(e.into()),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    match last {
        Some(e) => Err(e.into()),
        None => Ok(client(endpoint.connect().await?)),
    }
}
