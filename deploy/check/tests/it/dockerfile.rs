//! deploy/Dockerfile builds exactly the workspace's binary packages with the release build that
//! CI runs, and ships every binary in a runtime stage that runs as a non-root user, exposes the
//! gRPC port and checks health with `npuzzle health`. .dockerignore keeps what cargo needs.

use crate::common::{read, workspace};

/// One instruction: its keyword (upper case) and arguments, continuations joined.
#[derive(Debug)]
struct Instruction {
    keyword: String,
    args: String,
    /// 0-based index of the `FROM` stage it belongs to.
    stage: usize,
}

fn instructions(text: &str) -> Vec<Instruction> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut stage = 0usize;
    let mut froms = 0usize;
    for line in text.lines() {
        let trimmed = line.trim();
        // Comments, also inside a continued instruction (Docker drops them there too).
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                let (keyword, args) = current
                    .trim()
                    .split_once(char::is_whitespace)
                    .unwrap_or((current.trim(), ""));
                let keyword = keyword.to_ascii_uppercase();
                if keyword == "FROM" {
                    stage = froms;
                    froms += 1;
                }
                out.push(Instruction {
                    keyword,
                    args: args.trim().to_string(),
                    stage,
                });
                current.clear();
            }
        }
    }
    assert!(
        current.trim().is_empty(),
        "the Dockerfile ends inside an instruction"
    );
    out
}

fn dockerfile() -> Vec<Instruction> {
    instructions(&read("deploy/Dockerfile"))
}

/// The words of the `cargo build` command of a RUN instruction, up to `&&`, `;` or the end.
fn cargo_build(run: &str) -> Option<Vec<&str>> {
    let at = run.find("cargo build")?;
    Some(
        run[at..]
            .split_whitespace()
            .take_while(|w| !matches!(*w, "&&" | ";" | "||"))
            .collect(),
    )
}

fn last_stage(all: &[Instruction]) -> usize {
    all.iter().map(|i| i.stage).max().unwrap_or(0)
}

/// The default of each `ARG NAME=default` (global or in a stage).
fn arg_defaults(all: &[Instruction]) -> std::collections::BTreeMap<String, String> {
    all.iter()
        .filter(|i| i.keyword == "ARG")
        .filter_map(|i| i.args.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// `${NAME}` or `$NAME` replaced by the ARG's default.
fn expand(text: &str, args: &std::collections::BTreeMap<String, String>) -> String {
    let mut out = text.to_string();
    for (k, v) in args {
        out = out
            .replace(&format!("${{{k}}}"), v)
            .replace(&format!("${k}"), v);
    }
    out
}

#[test]
fn it_is_multi_stage_with_a_slim_runtime() {
    let all = dockerfile();
    let args = arg_defaults(&all);
    let froms: Vec<&Instruction> = all.iter().filter(|i| i.keyword == "FROM").collect();
    assert!(froms.len() >= 2, "a builder stage and a runtime stage");
    let runtime = expand(&froms.last().unwrap().args, &args);
    assert!(
        runtime.starts_with("debian:bookworm-slim") || runtime.contains("distroless/cc"),
        "runtime stage: {runtime}"
    );
}

/// No registry needed: no remote `# syntax=` frontend, and every stage's base is a build arg
/// (a local image can stand in: deploy/image/base.sh) or an earlier stage.
#[test]
fn every_base_image_is_a_build_arg_and_no_frontend_is_fetched() {
    let text = read("deploy/Dockerfile");
    for line in text.lines().take_while(|l| l.trim_start().starts_with('#')) {
        let directive = line.trim_start_matches('#').trim().to_ascii_lowercase();
        assert!(
            !directive.starts_with("syntax"),
            "a `# syntax=` line makes BuildKit fetch its frontend from a registry: {line}"
        );
    }
    let all = dockerfile();
    let args = arg_defaults(&all);
    let mut stages: Vec<String> = Vec::new();
    for from in all.iter().filter(|i| i.keyword == "FROM") {
        let words: Vec<&str> = from.args.split_whitespace().collect();
        let base = words[0];
        let name = base
            .strip_prefix("${")
            .and_then(|b| b.strip_suffix('}'))
            .unwrap_or_else(|| panic!("FROM {base}: name the base image with a build arg"));
        assert!(
            args.contains_key(name),
            "FROM {base}: no ARG {name} with a default"
        );
        if let Some(at) = words.iter().position(|w| w.eq_ignore_ascii_case("AS")) {
            stages.push(words[at + 1].to_string());
        }
    }
    // The runtime stage copies its binaries from a stage that the BINARIES arg can replace.
    assert_eq!(
        args.get("BINARIES").map(String::as_str),
        Some("builder"),
        "ARG BINARIES=builder: the binaries are built here unless an image of them is given"
    );
    assert!(stages.iter().any(|s| s == "builder"), "{stages:?}");
}

#[test]
fn the_build_names_exactly_the_binary_packages_with_locked_release() {
    let ws = workspace();
    let runs = dockerfile_runs();
    let builds: Vec<Vec<&str>> = runs.iter().filter_map(|r| cargo_build(r)).collect();
    assert_eq!(builds.len(), 1, "one cargo build: {builds:?}");
    let words = &builds[0];
    assert!(words.contains(&"--release"), "{words:?}");
    assert!(words.contains(&"--locked"), "{words:?}");
    let packages: std::collections::BTreeSet<&str> = words
        .windows(2)
        .filter(|w| w[0] == "-p" || w[0] == "--package")
        .map(|w| w[1])
        .collect();
    assert_eq!(
        packages,
        ws.binary_packages(),
        "the Dockerfile builds {packages:?}; the workspace's binary packages are {:?}",
        ws.binary_packages()
    );
}

fn dockerfile_runs() -> Vec<String> {
    dockerfile()
        .into_iter()
        .filter(|i| i.keyword == "RUN")
        .map(|i| i.args)
        .collect()
}

#[test]
fn ci_runs_the_same_build_command() {
    let runs = dockerfile_runs();
    let docker = runs
        .iter()
        .find_map(|r| cargo_build(r))
        .expect("a cargo build")
        .join(" ");
    let ci = read(".ci/run");
    let in_ci: Vec<String> = ci
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| cargo_build(l).map(|w| w.join(" ")))
        .collect();
    assert!(
        in_ci.contains(&docker),
        ".ci/run should run the Dockerfile's build command {docker:?}; it runs {in_ci:?}"
    );
}

#[test]
fn the_runtime_stage_ships_every_binary_as_a_non_root_user() {
    let ws = workspace();
    let all = dockerfile();
    let last = last_stage(&all);
    let runtime: Vec<&Instruction> = all.iter().filter(|i| i.stage == last).collect();
    let copies: String = runtime
        .iter()
        .filter(|i| i.keyword == "COPY" && i.args.contains("--from="))
        .map(|i| i.args.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    for bin in ws.binaries().keys() {
        assert!(
            copies
                .split_whitespace()
                .any(|w| w.ends_with(&format!("/{bin}"))),
            "the runtime stage does not copy {bin}: {copies}"
        );
    }
    let user = runtime
        .iter()
        .rev()
        .find(|i| i.keyword == "USER")
        .expect("a USER in the runtime stage");
    let name = user.args.split(':').next().unwrap();
    assert!(
        name != "root" && name != "0",
        "runs as {name}: use a non-root user"
    );
    assert!(
        runtime
            .iter()
            .any(|i| i.keyword == "EXPOSE" && i.args.split_whitespace().any(|p| p == "50051")),
        "EXPOSE 50051"
    );
}

#[test]
fn the_health_check_asks_the_coordinator_with_npuzzle_health() {
    let ws = workspace();
    let all = dockerfile();
    let check = all
        .iter()
        .find(|i| i.keyword == "HEALTHCHECK")
        .expect("a HEALTHCHECK");
    let command = &check.args[check.args.find("CMD").expect("HEALTHCHECK … CMD") + 3..];
    let words: Vec<String> = command
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|w| w.trim().trim_matches('"').to_string())
        .collect();
    assert!(ws.binaries().contains_key(words[0].as_str()), "{words:?}");
    assert_eq!(words[1], "health", "{words:?}");
    let url = &words[words.iter().position(|w| w == "--coordinator").unwrap() + 1];
    let listen = all
        .iter()
        .filter(|i| i.keyword == "ENV")
        .flat_map(|i| {
            i.args
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .find_map(|kv| kv.strip_prefix("NPUZZLE_LISTEN=").map(str::to_string))
        .expect("ENV NPUZZLE_LISTEN for the container");
    assert_eq!(
        crate::common::host_port(url).1,
        crate::common::listen_port(&listen)
    );
    assert!(listen.starts_with("0.0.0.0:"), "listen on every interface");
}

#[test]
fn image_env_is_read_by_some_binary() {
    let ws = workspace();
    for i in dockerfile().iter().filter(|i| i.keyword == "ENV") {
        for kv in i.args.split_whitespace() {
            let name = kv.split('=').next().unwrap();
            let ok = ws
                .binaries()
                .keys()
                .any(|b| ws.check_env(b, name, "deploy/Dockerfile").is_ok());
            assert!(ok, "deploy/Dockerfile sets {name}, which no binary reads");
        }
    }
}

/// Whether .dockerignore's patterns (in order, `!` re-including) leave `path` in the context.
/// Supports what that file uses: `dir/`, `dir/*`, `**/name/`, plain names.
fn kept(patterns: &[&str], path: &str) -> bool {
    let mut keep = true;
    for p in patterns {
        let (negated, p) = p.strip_prefix('!').map_or((false, *p), |p| (true, p));
        let p = p.trim_end_matches('/');
        let matches = if let Some(name) = p.strip_prefix("**/") {
            path.split('/').any(|part| part == name)
        } else if let Some(dir) = p.strip_suffix("/*") {
            path.starts_with(&format!("{dir}/"))
        } else {
            path == p || path.starts_with(&format!("{p}/"))
        };
        if matches {
            keep = negated;
        }
    }
    keep
}

#[test]
fn dockerignore_keeps_every_member_and_drops_build_output() {
    let ws = workspace();
    let text = read(".dockerignore");
    let patterns: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut needed = vec!["Cargo.toml".to_string(), "Cargo.lock".to_string()];
    for m in &ws.members {
        needed.push(format!("{}/Cargo.toml", m.dir));
        needed.push(format!("{}/src/lib.rs", m.dir));
    }
    needed.push("proto/npuzzle/v1/npuzzle.proto".into());
    needed.push("deploy/check/tests/dockerfile.rs".into());
    for path in &needed {
        assert!(kept(&patterns, path), ".dockerignore drops {path}");
    }
    for path in ["target/release/npuzzle", ".git/HEAD", "deploy/compose.yaml"] {
        assert!(!kept(&patterns, path), ".dockerignore keeps {path}");
    }
}
