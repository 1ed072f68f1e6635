//! Who may call what: bearer tokens for the two services, and the TLS identity both are served
//! with.
//!
//! - The **client token** guards `npuzzle.v1.Solver` (`Solve`, `SolveStream`, `Stats`): who may
//!   submit work.
//! - The **worker token** guards `npuzzle.v1.Cluster` (`Join`): who may join as a worker and so
//!   receive work units and report results.
//!
//! Each is optional (none: that service is open). The two must differ, or a client could join
//! as a worker; [`Auth::validate`] refuses equal tokens. `grpc.health.v1` and server reflection
//! stay open: load balancers and probes need them, and they tell nothing secret.
//!
//! A call carries `authorization: Bearer <token>`. [`RequireToken`], a tonic interceptor, checks
//! it before the service sees the call: SHA-256 of the token sent against SHA-256 of the token
//! configured, compared in constant time ([`subtle`]), so that neither the time taken nor an
//! early exit tells how much of a guess was right, or how long the real token is. A refusal is
//! `UNAUTHENTICATED` (never echoing what was sent), logged at WARN with the peer's address and
//! counted in `npuzzle_coordinator_unauthenticated_total`.
//!
//! The HTTP API and console ([`crate::http`], with `--http-listen`) require the client token
//! the same way, in an `Authorization: Bearer <token>` header ([`RequireToken::http`]).

use std::path::Path;
use std::sync::Arc;

use npuzzle_proto::security::{AUTHORIZATION, PemCertificates, SecurityError, Token};
use subtle::ConstantTimeEq;
use tonic::transport::Identity;
use tonic::{Request, Status};

/// The tokens the coordinator requires (none: open).
#[derive(Clone, Debug, Default)]
pub struct Auth {
    /// Required on `npuzzle.v1.Solver`.
    pub client: Option<Token>,
    /// Required on `npuzzle.v1.Cluster`.
    pub worker: Option<Token>,
}

/// Settings the coordinator refuses to start with.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error(
        "the client token and the worker token are the same: a client could join as a worker; give each its own"
    )]
    SameTokens,
    #[error(transparent)]
    Security(#[from] SecurityError),
    #[error("{}: no private key in it: {reason}", path.display())]
    NoKey {
        path: std::path::PathBuf,
        reason: String,
    },
}

impl Auth {
    /// Refuses a client token equal to the worker token.
    pub fn validate(&self) -> Result<(), AuthError> {
        if let (Some(client), Some(worker)) = (&self.client, &self.worker)
            && bool::from(
                digest(client.secret().as_bytes()).ct_eq(&digest(worker.secret().as_bytes())),
            )
        {
            return Err(AuthError::SameTokens);
        }
        Ok(())
    }
}

/// The certificate chain and private key the coordinator serves TLS with (both services, one
/// port). `Debug` names the files, never the key.
#[derive(Clone)]
pub struct ServerTls {
    pub identity: Identity,
    /// Where the certificate came from, for logs.
    pub cert_path: std::path::PathBuf,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerTls({})", self.cert_path.display())
    }
}

impl ServerTls {
    /// Reads the certificate chain (PEM, the server's certificate first) and its private key
    /// (PEM: PKCS#8, PKCS#1 or SEC1), and checks that both parse.
    pub fn read(cert: &Path, key: &Path) -> Result<ServerTls, AuthError> {
        use rustls::pki_types::PrivateKeyDer;
        use rustls::pki_types::pem::PemObject as _;
        let chain = PemCertificates::read(cert)?;
        let key_pem = std::fs::read(key).map_err(|source| SecurityError::Read {
            what: "the private key file",
            path: key.to_path_buf(),
            source,
        })?;
        PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| AuthError::NoKey {
            path: key.to_path_buf(),
            reason: e.to_string(),
        })?;
        Ok(ServerTls {
            identity: Identity::from_pem(&chain.pem, &key_pem),
            cert_path: cert.to_path_buf(),
        })
    }
}

type Digest = [u8; 32];

fn digest(bytes: &[u8]) -> Digest {
    let mut out = [0; 32];
    out.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref());
    out
}

/// Why a call was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    /// No `authorization` metadata.
    Missing,
    /// `authorization` is not `Bearer <token>`.
    Malformed,
    /// A token, not the right one.
    Invalid,
}

impl Refusal {
    fn label(self) -> &'static str {
        match self {
            Refusal::Missing => "missing",
            Refusal::Malformed => "malformed",
            Refusal::Invalid => "invalid",
        }
    }
}

/// The tonic interceptor in front of one service: passes every call when no token is
/// configured, else only calls that carry it.
#[derive(Clone)]
pub struct RequireToken {
    /// The service's full name, for logs and messages.
    service: &'static str,
    /// Who holds this token (`client`, `worker`), how to send it (the flag that does), and
    /// what carries it (gRPC `metadata`, an HTTP `header`).
    role: &'static str,
    hint: &'static str,
    carrier: &'static str,
    /// SHA-256 of the token; `None`: the service is open.
    expected: Option<Arc<Digest>>,
}

impl RequireToken {
    /// In front of `npuzzle.v1.Solver`, with the client token.
    pub fn solver(auth: &Auth) -> RequireToken {
        RequireToken::new(
            "npuzzle.v1.Solver",
            "client",
            "the metadata `authorization: Bearer <token>` (npuzzle --token-file FILE)",
            "metadata",
            auth.client.as_ref(),
        )
    }

    /// In front of `npuzzle.v1.Cluster`, with the worker token.
    pub fn cluster(auth: &Auth) -> RequireToken {
        RequireToken::new(
            "npuzzle.v1.Cluster",
            "worker",
            "the metadata `authorization: Bearer <token>` (npuzzle-worker --token-file FILE)",
            "metadata",
            auth.worker.as_ref(),
        )
    }

    fn new(
        service: &'static str,
        role: &'static str,
        hint: &'static str,
        carrier: &'static str,
        token: Option<&Token>,
    ) -> RequireToken {
        RequireToken {
            service,
            role,
            hint,
            carrier,
            expected: token.map(|t| Arc::new(digest(t.secret().as_bytes()))),
        }
    }

    /// The JSON API and console of [`crate::http`], with the client token: what may submit
    /// work over gRPC may submit it over HTTP, and nothing else may.
    pub fn http(auth: &Auth) -> RequireToken {
        RequireToken::new(
            "http",
            "client",
            "the header `Authorization: Bearer <token>`",
            "header",
            auth.client.as_ref(),
        )
    }

    /// Whether a token is required at all.
    pub fn required(&self) -> bool {
        self.expected.is_some()
    }

    /// Checks the value of an `authorization` header or metadata entry (`None`: absent) from
    /// `peer`. A refusal is logged, counted and returned as `UNAUTHENTICATED`.
    pub fn authorize(
        &self,
        authorization: Option<&[u8]>,
        peer: Option<std::net::SocketAddr>,
    ) -> Result<(), Status> {
        let Some(expected) = &self.expected else {
            return Ok(());
        };
        match check(authorization, expected) {
            Ok(()) => Ok(()),
            Err(refusal) => {
                let peer = peer.map_or_else(|| "unknown".to_string(), |a| a.to_string());
                tracing::warn!(
                    peer = %peer,
                    service = self.service,
                    reason = refusal.label(),
                    "refused a call without a valid {} token",
                    self.role
                );
                crate::metrics::unauthenticated(self.service, refusal.label());
                Err(self.status(refusal))
            }
        }
    }

    fn status(&self, refusal: Refusal) -> Status {
        match refusal {
            Refusal::Missing => Status::unauthenticated(format!(
                "a {} token is required for {}: send {}",
                self.role, self.service, self.hint
            )),
            Refusal::Malformed => Status::unauthenticated(format!(
                "the authorization {} must be `Bearer <token>`",
                self.carrier
            )),
            Refusal::Invalid => Status::unauthenticated("invalid token"),
        }
    }
}

/// Whether `authorization` (`None`: absent) carries the token whose digest is `expected`.
fn check(authorization: Option<&[u8]>, expected: &Digest) -> Result<(), Refusal> {
    let value = authorization.ok_or(Refusal::Missing)?;
    // The scheme is case-insensitive (RFC 7235); the token is what follows one space.
    let (scheme, token) = value.split_at_checked(7).ok_or(Refusal::Malformed)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") || token.is_empty() {
        return Err(Refusal::Malformed);
    }
    if bool::from(digest(token).ct_eq(expected)) {
        Ok(())
    } else {
        Err(Refusal::Invalid)
    }
}

impl tonic::service::Interceptor for RequireToken {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let authorization = request.metadata().get(AUTHORIZATION).map(|v| v.as_bytes());
        self.authorize(authorization, request.remote_addr())?;
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(s: &str) -> Token {
        Token::new(s, "test").unwrap()
    }

    fn call(interceptor: &RequireToken, authorization: Option<&str>) -> Result<(), Status> {
        let mut request = Request::new(());
        if let Some(value) = authorization {
            request
                .metadata_mut()
                .insert(AUTHORIZATION, value.parse().unwrap());
        }
        tonic::service::Interceptor::call(&mut interceptor.clone(), request).map(|_| ())
    }

    #[test]
    fn the_scheme_is_case_insensitive_and_anything_else_is_refused() {
        let auth = Auth {
            client: Some(token("abc123")),
            worker: None,
        };
        let solver = RequireToken::solver(&auth);
        assert!(call(&solver, Some("Bearer abc123")).is_ok());
        assert!(call(&solver, Some("bearer abc123")).is_ok());
        for bad in [
            "Bearer abc1234",
            "Bearer abc12",
            "Basic abc123",
            "Bearer ",
            "abc123",
        ] {
            let status = call(&solver, Some(bad)).unwrap_err();
            assert_eq!(status.code(), tonic::Code::Unauthenticated, "{bad}");
            assert!(
                !status.message().contains("abc"),
                "{bad}: {}",
                status.message()
            );
        }
        let missing = call(&solver, None).unwrap_err();
        assert!(
            missing.message().contains("token is required"),
            "{missing:?}"
        );
        // No worker token: the cluster service is open.
        assert!(call(&RequireToken::cluster(&auth), None).is_ok());
    }

    #[test]
    fn equal_client_and_worker_tokens_are_refused() {
        let same = Auth {
            client: Some(token("same")),
            worker: Some(token("same")),
        };
        assert!(matches!(same.validate(), Err(AuthError::SameTokens)));
        let different = Auth {
            client: Some(token("one")),
            worker: Some(token("two")),
        };
        assert!(different.validate().is_ok());
    }
}
