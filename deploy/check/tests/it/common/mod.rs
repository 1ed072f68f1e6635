//! What the deploy files are checked against, read from the workspace at test time: its members,
//! their binaries, and the `NPUZZLE_*` variables each binary reads (its `env = "…"` attributes),
//! so that renaming a package, a binary or a flag breaks these tests until `deploy/` follows.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

pub fn read(relative: &str) -> String {
    let path = root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every document of a YAML file (empty documents dropped), or a panic naming the file and the
/// parser's complaint.
pub fn yaml(relative: &str) -> Vec<Yaml> {
    YamlLoader::load_from_str(&read(relative))
        .unwrap_or_else(|e| panic!("{relative} is not valid YAML: {e}"))
        .into_iter()
        .filter(|d| !matches!(d, Yaml::Null))
        .collect()
}

/// Files under `dir` (relative to the root), recursively, whose names end with one of `exts`.
pub fn files(dir: &str, exts: &[&str]) -> Vec<String> {
    fn walk(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, exts, out);
            } else if exts
                .iter()
                .any(|x| p.to_string_lossy().ends_with(&format!(".{x}")))
            {
                out.push(p);
            }
        }
    }
    let root = root();
    let mut found = Vec::new();
    walk(&root.join(dir), exts, &mut found);
    let mut names: Vec<String> = found
        .iter()
        .map(|p| {
            p.strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// One workspace member.
#[derive(Debug)]
pub struct Member {
    pub package: String,
    /// Relative to the root, e.g. `coordinator`.
    pub dir: String,
    /// Its binaries' names (`[[bin]]`, or the package name for `src/main.rs`).
    pub bins: Vec<String>,
    /// Its normal dependencies (not dev or build).
    pub deps: Vec<String>,
}

pub struct Workspace {
    pub members: Vec<Member>,
}

fn toml_file(relative: &str) -> toml::Table {
    read(relative)
        .parse()
        .unwrap_or_else(|e| panic!("{relative}: {e}"))
}

pub fn workspace() -> Workspace {
    let top = toml_file("Cargo.toml");
    let dirs = top["workspace"]["members"]
        .as_array()
        .expect("workspace.members");
    let members = dirs
        .iter()
        .map(|d| {
            let dir = d.as_str().expect("a member path").to_string();
            let manifest = toml_file(&format!("{dir}/Cargo.toml"));
            let package = manifest["package"]["name"].as_str().unwrap().to_string();
            let mut bins: Vec<String> = manifest
                .get("bin")
                .and_then(|b| b.as_array())
                .map(|bins| {
                    bins.iter()
                        .map(|b| b["name"].as_str().unwrap().to_string())
                        .collect()
                })
                .unwrap_or_default();
            if bins.is_empty() && root().join(&dir).join("src/main.rs").exists() {
                bins.push(package.clone());
            }
            let deps = manifest
                .get("dependencies")
                .and_then(|d| d.as_table())
                .map(|d| d.keys().cloned().collect())
                .unwrap_or_default();
            Member {
                package,
                dir,
                bins,
                deps,
            }
        })
        .collect();
    Workspace { members }
}

/// Variables read by every binary through the libraries it links, not through its flags.
pub const RUNTIME_ENV: [&str; 3] = ["RUST_LOG", "RUST_BACKTRACE", "RUST_LIB_BACKTRACE"];

/// Settings the deploy files already use for features of a branch that has not landed yet:
/// (variable, words that appear in a binary's own sources once that feature is there). While a
/// binary's sources mention none of the words, the variable is tolerated (clap ignores unknown
/// variables); once they do, the binary must read the variable under exactly this name.
pub const PENDING: [(&str, &[&str]); 2] = [
    ("NPUZZLE_METRICS_LISTEN", &["metrics"]),
    (
        "NPUZZLE_LOG_FORMAT",
        &["log_format", "log-format", "logformat"],
    ),
];

impl Workspace {
    /// Binary name → the member that builds it.
    pub fn binaries(&self) -> BTreeMap<&str, &Member> {
        self.members
            .iter()
            .flat_map(|m| m.bins.iter().map(move |b| (b.as_str(), m)))
            .collect()
    }

    /// Packages that build a binary.
    pub fn binary_packages(&self) -> BTreeSet<&str> {
        self.members
            .iter()
            .filter(|m| !m.bins.is_empty())
            .map(|m| m.package.as_str())
            .collect()
    }

    fn member_of(&self, binary: &str) -> &Member {
        self.binaries()
            .get(binary)
            .copied()
            .unwrap_or_else(|| panic!("{binary:?} is not a binary of this workspace"))
    }

    /// The Rust sources of `binary`'s package and of the workspace libraries it depends on.
    fn sources(&self, binary: &str, with_deps: bool) -> Vec<String> {
        let member = self.member_of(binary);
        let mut dirs = vec![member.dir.clone()];
        if with_deps {
            for m in &self.members {
                if member.deps.contains(&m.package) {
                    dirs.push(m.dir.clone());
                }
            }
        }
        dirs.iter()
            .flat_map(|d| files(&format!("{d}/src"), &["rs"]))
            .map(|f| read(&f))
            .collect()
    }

    /// The `NPUZZLE_*` variables `binary` reads: each `env = "NPUZZLE_…"` in its sources.
    pub fn env_names(&self, binary: &str) -> BTreeSet<String> {
        self.sources(binary, true)
            .iter()
            .flat_map(|s| env_attributes(s))
            .collect()
    }

    /// Whether `binary`'s own sources mention `word` (any case).
    pub fn mentions(&self, binary: &str, word: &str) -> bool {
        let word = word.to_ascii_lowercase();
        self.sources(binary, false)
            .iter()
            .any(|s| s.to_ascii_lowercase().contains(&word))
    }

    /// `Ok` when `binary` reads `name` (or `name` is pending, see [`PENDING`]); otherwise a
    /// message naming the file (`place`), the variable and what the binary does read.
    pub fn check_env(&self, binary: &str, name: &str, place: &str) -> Result<(), String> {
        if RUNTIME_ENV.contains(&name) {
            return Ok(());
        }
        let known = self.env_names(binary);
        if known.contains(name) {
            return Ok(());
        }
        if let Some((_, words)) = PENDING.iter().find(|(n, _)| *n == name)
            && !words.iter().any(|w| self.mentions(binary, w))
        {
            return Ok(());
        }
        Err(format!(
            "{place}: {binary} does not read {name}; it reads {known:?}"
        ))
    }
}

/// The values of `env = "…"` attributes that start with `NPUZZLE_`.
pub fn env_attributes(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find("env") {
        let before = rest[..at].chars().last();
        rest = &rest[at + 3..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(value) = rest.trim_start().strip_prefix('=') else {
            continue;
        };
        let Some(value) = value.trim_start().strip_prefix('"') else {
            continue;
        };
        if let Some(end) = value.find('"') {
            let name = &value[..end];
            if name.starts_with("NPUZZLE_") {
                names.push(name.to_string());
            }
        }
    }
    names
}

/// A workspace binary named by a command (`npuzzle-worker`, `/usr/local/bin/npuzzle`), or a
/// message saying it is none.
pub fn binary_of<'w>(ws: &'w Workspace, command: &str, place: &str) -> Result<&'w str, String> {
    let name = command.rsplit('/').next().unwrap_or(command);
    ws.binaries()
        .keys()
        .find(|b| **b == name)
        .copied()
        .ok_or_else(|| {
            format!(
                "{place}: {command:?} is not a binary of this workspace ({:?})",
                ws.binaries().keys().collect::<Vec<_>>()
            )
        })
}

/// The strings of a YAML sequence (a panic naming `what` otherwise).
pub fn strings<'y>(y: &'y Yaml, what: &str) -> Vec<&'y str> {
    y.as_vec()
        .unwrap_or_else(|| panic!("{what} should be a list, found {y:?}"))
        .iter()
        .map(|s| {
            s.as_str()
                .unwrap_or_else(|| panic!("{what}: {s:?} should be a string"))
        })
        .collect()
}

/// `host` and `port` of a URL such as `http://coordinator:50051`.
pub fn host_port(url: &str) -> (String, u16) {
    let rest = url
        .split_once("://")
        .map_or(url, |(_, r)| r)
        .trim_end_matches('/');
    let (host, port) = rest
        .rsplit_once(':')
        .unwrap_or_else(|| panic!("{url:?} has no port"));
    (
        host.to_string(),
        port.parse()
            .unwrap_or_else(|_| panic!("{url:?}: bad port {port:?}")),
    )
}

/// The port of a listen address such as `0.0.0.0:50051`.
pub fn listen_port(address: &str) -> u16 {
    host_port(address).1
}
