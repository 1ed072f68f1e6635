//! deploy/compose.yaml: a coordinator with a health check through `npuzzle health`, a `worker`
//! service that `--scale worker=N` can multiply, each service running a binary of this workspace
//! with variables that binary reads.

use crate::common::{binary_of, host_port, listen_port, strings, workspace, yaml};
use yaml_rust2::Yaml;

const FILE: &str = "deploy/compose.yaml";

fn compose() -> Yaml {
    let mut docs = yaml(FILE);
    assert_eq!(docs.len(), 1, "{FILE}: one document");
    docs.remove(0)
}

fn service<'y>(c: &'y Yaml, name: &str) -> &'y Yaml {
    let s = &c["services"][name];
    assert!(!s.is_badvalue(), "{FILE}: no service {name:?}");
    s
}

/// `environment` as (name, value) pairs; values must be strings.
fn environment(s: &Yaml, place: &str) -> Vec<(String, String)> {
    match &s["environment"] {
        Yaml::BadValue => Vec::new(),
        Yaml::Hash(h) => h
            .iter()
            .map(|(k, v)| {
                let k = k.as_str().unwrap().to_string();
                let v = v
                    .as_str()
                    .unwrap_or_else(|| panic!("{place}: {k} should be a quoted string"));
                (k, v.to_string())
            })
            .collect(),
        Yaml::Array(a) => a
            .iter()
            .map(|kv| {
                let (k, v) = kv.as_str().unwrap().split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect(),
        other => panic!("{place}: environment is {other:?}"),
    }
}

fn lookup<'e>(pairs: &'e [(String, String)], name: &str) -> Option<&'e str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn every_service_runs_a_workspace_binary_with_variables_it_reads() {
    let ws = workspace();
    let c = compose();
    let services = c["services"].as_hash().expect("services");
    for (name, s) in services {
        let place = format!("{FILE}: service {}", name.as_str().unwrap());
        let command = strings(&s["command"], &place);
        let binary = binary_of(&ws, command[0], &place).unwrap();
        for (k, _) in environment(s, &place) {
            ws.check_env(binary, &k, &place).unwrap();
        }
        assert_eq!(
            s["image"].as_str(),
            Some("npuzzle:latest"),
            "{place}: the image deploy/Dockerfile builds"
        );
    }
    assert_eq!(
        strings(&service(&c, "coordinator")["command"], "coordinator")[0],
        "npuzzle-coordinator"
    );
    assert_eq!(
        strings(&service(&c, "worker")["command"], "worker")[0],
        "npuzzle-worker"
    );
}

#[test]
fn the_image_is_built_from_deploy_dockerfile() {
    let c = compose();
    let build = &service(&c, "coordinator")["build"];
    let context = crate::common::root()
        .join("deploy")
        .join(build["context"].as_str().expect("build.context"));
    let dockerfile = context.join(build["dockerfile"].as_str().expect("build.dockerfile"));
    assert!(dockerfile.is_file(), "{}", dockerfile.display());
    assert!(
        context.join("Cargo.lock").is_file(),
        "the context is the repository root"
    );
}

#[test]
fn the_coordinator_listens_everywhere_and_checks_health_on_its_port() {
    let c = compose();
    let s = service(&c, "coordinator");
    let env = environment(s, "coordinator");
    let listen = lookup(&env, "NPUZZLE_LISTEN").expect("NPUZZLE_LISTEN");
    assert!(listen.starts_with("0.0.0.0:"), "{listen}");
    let port = listen_port(listen);
    let test = strings(&s["healthcheck"]["test"], "coordinator healthcheck.test");
    assert_eq!(test[0], "CMD");
    assert_eq!(&test[1..3], ["npuzzle", "health"]);
    let url = test[test.iter().position(|w| *w == "--coordinator").unwrap() + 1];
    assert_eq!(host_port(url), ("127.0.0.1".to_string(), port));
    let published = strings(&s["ports"], "coordinator ports");
    assert!(
        published.iter().any(|p| p.ends_with(&format!(":{port}"))),
        "{published:?} should publish {port}"
    );
}

#[test]
fn workers_scale_and_find_the_coordinator() {
    let c = compose();
    let w = service(&c, "worker");
    for fixed in ["container_name", "ports", "hostname"] {
        assert!(
            w[fixed].is_badvalue(),
            "{FILE}: worker has {fixed}: `--scale worker=N` would collide"
        );
    }
    if let Some(networks) = w["networks"].as_hash() {
        for (_, n) in networks {
            assert!(n["ipv4_address"].is_badvalue(), "a fixed worker address");
        }
    }
    let env = environment(w, "worker");
    let url = lookup(&env, "NPUZZLE_COORDINATOR").expect("NPUZZLE_COORDINATOR");
    let (host, port) = host_port(url);
    assert!(
        !c["services"][host.as_str()].is_badvalue(),
        "{url}: no service {host}"
    );
    let listen = environment(&c["services"][host.as_str()], &host);
    assert_eq!(
        Some(port),
        env_port(&listen),
        "{url} vs the coordinator's NPUZZLE_LISTEN"
    );
    // The coordinator reports SERVING only once a worker has joined: waiting for it to be
    // healthy before starting workers would wait forever.
    for (dep, cond) in w["depends_on"].as_hash().into_iter().flatten() {
        assert_ne!(
            cond["condition"].as_str(),
            Some("service_healthy"),
            "worker waits for {dep:?} to be healthy: a deadlock"
        );
    }
    // The image's health check asks a coordinator on 127.0.0.1, which a worker does not run.
    assert_eq!(w["healthcheck"]["disable"].as_bool(), Some(true));
}

fn env_port(pairs: &[(String, String)]) -> Option<u16> {
    lookup(pairs, "NPUZZLE_LISTEN").map(listen_port)
}

#[test]
fn volumes_are_declared_and_mounted_at_the_table_directory() {
    let c = compose();
    let declared = c["volumes"].as_hash().expect("top-level volumes");
    for (name, s) in c["services"].as_hash().unwrap() {
        let place = format!("service {}", name.as_str().unwrap());
        let env = environment(s, &place);
        let mounts = match &s["volumes"] {
            Yaml::BadValue => Vec::new(),
            v => strings(v, &place),
        };
        for mount in mounts {
            let mut parts = mount.split(':');
            let (source, target) = (parts.next().unwrap(), parts.next().unwrap());
            if !source.starts_with('.') && !source.starts_with('/') {
                assert!(
                    declared.contains_key(&Yaml::String(source.to_string())),
                    "{place}: volume {source} is not declared"
                );
            }
            assert_eq!(
                lookup(&env, "NPUZZLE_PDB_DIR"),
                Some(target),
                "{place}: the volume is where NPUZZLE_PDB_DIR points"
            );
        }
    }
}
