//! Scrapes a Prometheus text endpoint over plain HTTP/1.1 and parses what it says, strictly
//! enough to catch a malformed line: the coordinator's and the worker's metrics tests, and the
//! worker tests that read the coordinator's HTTP API ([`get`]).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One scrape: `name{k="v",…}` (labels sorted by name) → value, and the `# HELP` names.
#[derive(Debug, Default)]
pub struct Scrape {
    pub samples: BTreeMap<String, f64>,
    pub help: Vec<String>,
    pub text: String,
}

impl Scrape {
    /// The value of `name` with exactly `labels`, if present.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples.get(&key(name, labels)).copied()
    }

    /// The same, 0 when absent (a counter not yet incremented).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels).unwrap_or(0.0)
    }
}

fn key(name: &str, labels: &[(&str, &str)]) -> String {
    let mut labels: Vec<(&str, &str)> = labels.to_vec();
    labels.sort();
    if labels.is_empty() {
        return name.to_string();
    }
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    format!("{name}{{{}}}", inner.join(","))
}

/// `GET path` on `address`: (status code, body).
pub fn get(address: SocketAddr, path: &str) -> (u16, String) {
    let mut last = None;
    for _ in 0..50 {
        match TcpStream::connect_timeout(&address, Duration::from_secs(2)) {
            Ok(mut stream) => {
                stream
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                write!(
                    stream,
                    "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
                )
                .unwrap();
                let mut response = String::new();
                stream.read_to_string(&mut response).unwrap();
                let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
                let status: u16 = head
                    .split_whitespace()
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .expect("a status line");
                assert!(
                    !head
                        .to_ascii_lowercase()
                        .contains("transfer-encoding: chunked"),
                    "expected a plain body"
                );
                return (status, body.to_string());
            }
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("cannot connect to {address}: {last:?}");
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Parses the text exposition format; panics on a line that is not `name{labels} value`.
pub fn parse(text: &str) -> Scrape {
    let mut scrape = Scrape {
        text: text.to_string(),
        ..Scrape::default()
    };
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split_whitespace().next().expect("a HELP name");
            scrape.help.push(name.to_string());
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("`series value`");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|_| panic!("bad value in {line:?}")),
        };
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => {
                let inner = rest.strip_suffix('}').unwrap_or_else(|| panic!("{line:?}"));
                let mut labels = Vec::new();
                for pair in inner.split("\",").filter(|p| !p.is_empty()) {
                    let (k, v) = pair.split_once("=\"").unwrap_or_else(|| panic!("{line:?}"));
                    assert!(valid_name(k), "label name in {line:?}");
                    labels.push((k, v.trim_end_matches('"')));
                }
                (name, labels)
            }
            None => (series, Vec::new()),
        };
        assert!(valid_name(name), "metric name in {line:?}");
        scrape.samples.insert(key(name, &labels), value);
    }
    scrape
}

/// Scrapes `http://address/metrics`.
pub fn scrape(address: SocketAddr) -> Scrape {
    let (status, body) = get(address, "/metrics");
    assert_eq!(status, 200, "{body}");
    parse(&body)
}
