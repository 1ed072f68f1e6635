//! Certificates made at test time with rcgen, written as PEM files into a temporary directory:
//! a CA, a coordinator certificate it signs for `localhost` and `127.0.0.1`, and a second,
//! unrelated CA that has signed nothing here. The coordinator's and the worker's TLS tests use
//! them.

use std::path::PathBuf;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// The files of [`pki`].
pub struct Pki {
    /// Holds the files; removed when dropped.
    pub dir: tempfile::TempDir,
    /// The CA that signed the coordinator's certificate.
    pub ca: PathBuf,
    /// The coordinator's certificate (for `localhost` and `127.0.0.1`) and its private key.
    pub cert: PathBuf,
    pub key: PathBuf,
    /// A CA that did not sign it.
    pub other_ca: PathBuf,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// A fresh CA, a coordinator certificate signed by it, and another CA.
pub fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let authority = ca("npuzzle test CA");
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "npuzzle coordinator");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, &authority).unwrap();
    let stranger = ca("some other CA");
    let write = |name: &str, pem: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, pem).unwrap();
        path
    };
    Pki {
        ca: write("ca.pem", authority.pem()),
        cert: write("coordinator.pem", cert.pem()),
        key: write("coordinator.key", key.serialize_pem()),
        other_ca: write("other-ca.pem", stranger.pem()),
        dir,
    }
}
