//! How a call to the coordinator is secured: a bearer token in the `authorization` metadata of
//! every call, and TLS (rustls, ring) that verifies the coordinator's certificate.
//!
//! The callers (the worker and the `npuzzle` command line) build their connection with
//! [`ClientSecurity`]; the coordinator reads its own tokens with [`Token`] too, and checks them
//! in `npuzzle_coordinator::auth`.
//!
//! With the `cli` feature, [`TokenArgs`] and [`TlsArgs`] are the flags that fill a
//! [`ClientSecurity`] (`--token`/`--token-file`, `--tls-ca`/`--tls-domain`), shared by the
//! worker and the command line.
//!
//! A [`Token`] never shows its secret in `Debug` output or in an error message, and its metadata
//! value is marked sensitive (HTTP/2 never puts it in a compression table).

use std::fmt;
use std::path::{Path, PathBuf};

use tonic::metadata::AsciiMetadataValue;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint};

/// The metadata key that carries the token: `authorization: Bearer <token>`.
pub const AUTHORIZATION: &str = "authorization";

/// Why a token, a certificate or a URL cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SecurityError {
    #[error("{what} is empty")]
    EmptyToken { what: String },
    #[error(
        "{what}: character {position} is not printable ASCII; a token is printable ASCII without spaces (e.g. `openssl rand -hex 32`)"
    )]
    BadToken { what: String, position: usize },
    #[error("{flag} and {flag}-file are both set: give the token one way")]
    TokenTwice { flag: &'static str },
    #[error("cannot read {what} {}: {source}", path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: no PEM certificate in it (-----BEGIN CERTIFICATE-----)", path.display())]
    NoCertificate { path: PathBuf },
    #[error("{}: a PEM block does not parse: {reason}", path.display())]
    BadPem { path: PathBuf, reason: String },
    #[error(
        "--tls-ca and --tls-domain apply to https:// URLs only, and {url} is plaintext: use https://"
    )]
    TlsWithoutHttps { url: String },
    #[error("invalid coordinator URL {url:?}: {source}")]
    Url {
        url: String,
        source: tonic::transport::Error,
    },
    #[error("TLS settings for {url}: {source}")]
    Tls {
        url: String,
        source: tonic::transport::Error,
    },
}

/// A bearer token: a shared secret of printable ASCII without spaces.
#[derive(Clone)]
pub struct Token {
    secret: String,
    /// `Bearer <secret>`, marked sensitive, ready to attach.
    bearer: AsciiMetadataValue,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// `secret` as a token; `what` names where it came from in errors (e.g. `--token
    /// (NPUZZLE_TOKEN)`). Errors never contain the secret.
    pub fn new(secret: impl Into<String>, what: &str) -> Result<Token, SecurityError> {
        let secret = secret.into();
        if secret.is_empty() {
            return Err(SecurityError::EmptyToken { what: what.into() });
        }
        if let Some(position) = secret.bytes().position(|b| !b.is_ascii_graphic()) {
            return Err(SecurityError::BadToken {
                what: what.into(),
                position: position + 1,
            });
        }
        let mut bearer =
            AsciiMetadataValue::try_from(format!("Bearer {secret}")).map_err(|_| {
                SecurityError::BadToken {
                    what: what.into(),
                    position: 1,
                }
            })?;
        bearer.set_sensitive(true);
        Ok(Token { secret, bearer })
    }

    /// The token in the file at `path`: its contents less trailing line breaks (`echo` and
    /// editors add one). An empty file is an error.
    pub fn read(path: &Path) -> Result<Token, SecurityError> {
        let text = std::fs::read_to_string(path).map_err(|source| SecurityError::Read {
            what: "the token file",
            path: path.to_path_buf(),
            source,
        })?;
        Token::new(
            text.trim_end_matches(['\n', '\r']),
            &format!("the token file {}", path.display()),
        )
    }

    /// The token given by a flag pair such as `--token`/`--token-file`: the value, or the
    /// contents of the file, or none; both at once is an error. `flag` is the value flag's name
    /// with its environment variable, for messages (e.g. `--token`).
    pub fn from_flags(
        value: Option<String>,
        file: Option<&Path>,
        flag: &'static str,
    ) -> Result<Option<Token>, SecurityError> {
        match (value, file) {
            (Some(_), Some(_)) => Err(SecurityError::TokenTwice { flag }),
            (Some(v), None) => Token::new(v, flag).map(Some),
            (None, Some(path)) => Token::read(path).map(Some),
            (None, None) => Ok(None),
        }
    }

    /// The secret itself, for comparing it (in constant time) or hashing it.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// The `authorization` metadata value: `Bearer <secret>`, marked sensitive.
    pub fn bearer(&self) -> AsciiMetadataValue {
        self.bearer.clone()
    }
}

/// An interceptor that adds `authorization: Bearer <token>` to every call (nothing without a
/// token): `SolverClient::with_interceptor(channel, AttachToken::new(token))`.
#[derive(Clone, Debug, Default)]
pub struct AttachToken(Option<Token>);

impl AttachToken {
    pub fn new(token: Option<Token>) -> AttachToken {
        AttachToken(token)
    }
}

impl tonic::service::Interceptor for AttachToken {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(token) = &self.0 {
            request.metadata_mut().insert(AUTHORIZATION, token.bearer());
        }
        Ok(request)
    }
}

/// PEM certificates read from a file (a CA to trust, or a server's chain), checked to parse.
#[derive(Clone)]
pub struct PemCertificates {
    pub path: PathBuf,
    pub pem: Vec<u8>,
}

impl fmt::Debug for PemCertificates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PemCertificates({})", self.path.display())
    }
}

impl PemCertificates {
    /// Reads `path` and checks that it holds at least one certificate and that every
    /// certificate in it parses as PEM.
    pub fn read(path: &Path) -> Result<PemCertificates, SecurityError> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject as _;
        let pem = std::fs::read(path).map_err(|source| SecurityError::Read {
            what: "the certificate file",
            path: path.to_path_buf(),
            source,
        })?;
        let mut count = 0;
        for certificate in CertificateDer::pem_slice_iter(&pem) {
            certificate.map_err(|e| SecurityError::BadPem {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
            count += 1;
        }
        if count == 0 {
            return Err(SecurityError::NoCertificate {
                path: path.to_path_buf(),
            });
        }
        Ok(PemCertificates {
            path: path.to_path_buf(),
            pem,
        })
    }
}

/// How a worker or a client reaches the coordinator: the token it sends, and for `https://`
/// URLs the CA that must have signed the coordinator's certificate.
#[derive(Clone, Debug, Default)]
pub struct ClientSecurity {
    /// Sent as `authorization: Bearer <token>` with every call.
    pub token: Option<Token>,
    /// The CA certificate(s) the coordinator's certificate must chain to. `None`: the Mozilla
    /// root CAs (webpki-roots), for a coordinator with a publicly trusted certificate.
    pub tls_ca: Option<PemCertificates>,
    /// The name the coordinator's certificate must carry (and the TLS SNI), when it is not the
    /// URL's host: e.g. `coordinator.internal` while connecting to an IP address.
    pub tls_domain: Option<String>,
}

impl ClientSecurity {
    /// An endpoint for `url`: TLS for `https://` (verifying the certificate against
    /// [`tls_ca`](Self::tls_ca) or the Mozilla roots, for [`tls_domain`](Self::tls_domain) or the
    /// URL's host), plaintext for `http://`. TLS settings with an `http://` URL are an error
    /// rather than silently unused.
    pub fn endpoint(&self, url: &str) -> Result<Endpoint, SecurityError> {
        let endpoint =
            Endpoint::from_shared(url.to_string()).map_err(|source| SecurityError::Url {
                url: url.to_string(),
                source,
            })?;
        if endpoint.uri().scheme_str() != Some("https") {
            if self.tls_ca.is_some() || self.tls_domain.is_some() {
                return Err(SecurityError::TlsWithoutHttps {
                    url: url.to_string(),
                });
            }
            return Ok(endpoint);
        }
        let mut tls = ClientTlsConfig::new();
        tls = match &self.tls_ca {
            Some(ca) => tls.ca_certificate(Certificate::from_pem(&ca.pem)),
            None => tls.with_webpki_roots(),
        };
        if let Some(domain) = &self.tls_domain {
            tls = tls.domain_name(domain.clone());
        }
        endpoint
            .tls_config(tls)
            .map_err(|source| SecurityError::Tls {
                url: url.to_string(),
                source,
            })
    }

    /// The interceptor that attaches [`token`](Self::token) to every call.
    pub fn interceptor(&self) -> AttachToken {
        AttachToken::new(self.token.clone())
    }
}

/// The TLS failure behind a connection error, if that is what it was: the coordinator's
/// certificate did not verify (`InvalidCertificate(UnknownIssuer)`, `NotValidForName`, …), or
/// the handshake failed otherwise (e.g. the coordinator does not speak TLS). Walks the error's
/// sources, and into `std::io::Error`s, whose `source()` skips the error they wrap.
pub fn tls_failure<'e>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e rustls::Error> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        next = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_file_loses_its_trailing_line_break() {
        let dir = std::env::temp_dir().join(format!("npuzzle-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "s3cret-token\r\n").unwrap();
        assert_eq!(Token::read(&path).unwrap().secret(), "s3cret-token");
        std::fs::write(&path, "\n").unwrap();
        let empty = Token::read(&path).unwrap_err().to_string();
        assert!(empty.contains("is empty"), "{empty}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn errors_and_debug_never_show_the_secret() {
        let token = Token::new("hunter2hunter2", "--token").unwrap();
        assert!(!format!("{token:?}").contains("hunter2"));
        let bad = Token::new("hunter2 hunter2", "--token")
            .unwrap_err()
            .to_string();
        assert!(!bad.contains("hunter2"), "{bad}");
        assert!(bad.contains("character 8"), "{bad}");
        assert!(token.bearer().is_sensitive());
        assert_eq!(token.bearer(), "Bearer hunter2hunter2");
    }

    #[test]
    fn a_value_and_a_file_together_are_refused() {
        let both = Token::from_flags(Some("a".into()), Some(Path::new("/x")), "--token");
        assert!(matches!(both, Err(SecurityError::TokenTwice { .. })));
        assert!(Token::from_flags(None, None, "--token").unwrap().is_none());
    }

    #[test]
    fn tls_settings_with_a_plaintext_url_are_refused() {
        let security = ClientSecurity {
            tls_domain: Some("localhost".into()),
            ..ClientSecurity::default()
        };
        let error = security.endpoint("http://127.0.0.1:1").unwrap_err();
        assert!(
            matches!(error, SecurityError::TlsWithoutHttps { .. }),
            "{error}"
        );
        assert!(
            ClientSecurity::default()
                .endpoint("https://127.0.0.1:1")
                .is_ok()
        );
    }
}

/// The flags with which `npuzzle` and `npuzzle-worker` secure their connection to the
/// coordinator, defined once (feature `cli`): the token ([`TokenArgs`]) and the TLS
/// verification ([`TlsArgs`]). The help texts and environment variables are `npuzzle`'s; a
/// binary that words them otherwise (the worker's token is `NPUZZLE_WORKER_TOKEN`) adjusts them
/// with `clap::Command::mut_arg`, keeping the flags themselves.
#[cfg(feature = "cli")]
mod cli {
    use std::path::PathBuf;

    use super::{ClientSecurity, PemCertificates, SecurityError, Token};

    /// The bearer token sent to the coordinator: `--token` or `--token-file`.
    #[derive(clap::Args, Clone, Debug, Default)]
    pub struct TokenArgs {
        /// The client token the coordinator requires (its --client-token), sent as `authorization:
        /// Bearer TOKEN` with every call to --coordinator. Prefer --token-file: other processes of
        /// the same user can read the environment and the command line.
        #[arg(
            long,
            env = "NPUZZLE_TOKEN",
            value_name = "TOKEN",
            hide_env_values = true
        )]
        pub token: Option<String>,
        /// The client token, read from FILE (trailing line breaks dropped).
        #[arg(long, env = "NPUZZLE_TOKEN_FILE", value_name = "FILE")]
        pub token_file: Option<PathBuf>,
    }

    /// How an https:// coordinator's certificate is verified: `--tls-ca` and `--tls-domain`.
    #[derive(clap::Args, Clone, Debug, Default)]
    pub struct TlsArgs {
        /// For an https:// coordinator: the CA certificate (PEM) that must have signed its
        /// certificate. Without it, the Mozilla root CAs are trusted.
        #[arg(long, env = "NPUZZLE_TLS_CA", value_name = "FILE")]
        pub tls_ca: Option<PathBuf>,
        /// For an https:// coordinator: the name its certificate must carry, when it is not the
        /// URL's host (e.g. when connecting by IP address).
        #[arg(long, env = "NPUZZLE_TLS_DOMAIN", value_name = "NAME")]
        pub tls_domain: Option<String>,
    }

    impl TokenArgs {
        /// The token the flags give (read from its file), checked; `None` without either.
        pub fn token(&self) -> Result<Option<Token>, SecurityError> {
            Token::from_flags(self.token.clone(), self.token_file.as_deref(), "--token")
        }
    }

    impl ClientSecurity {
        /// The settings the flags give: the token and the CA read from their files, checked.
        pub fn from_args(
            token: &TokenArgs,
            tls: &TlsArgs,
        ) -> Result<ClientSecurity, SecurityError> {
            Ok(ClientSecurity {
                token: token.token()?,
                tls_ca: tls
                    .tls_ca
                    .as_deref()
                    .map(PemCertificates::read)
                    .transpose()?,
                tls_domain: tls.tls_domain.clone(),
            })
        }
    }
}

#[cfg(feature = "cli")]
pub use cli::{TlsArgs, TokenArgs};
