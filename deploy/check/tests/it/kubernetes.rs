//! deploy/k8s: the kustomization lists every manifest; a coordinator Deployment and its Service
//! (selectors matching the pod labels, port 50051, gRPC readiness probe on that port), a worker
//! Deployment that reaches the coordinator through the Service, resources on every container,
//! and configuration through ConfigMaps whose keys the binaries read.

use std::collections::BTreeMap;

use crate::common::{binary_of, files, host_port, listen_port, strings, workspace, yaml};
use yaml_rust2::Yaml;

const DIR: &str = "deploy/k8s";

/// Every object of every manifest, with the file it came from.
fn objects() -> Vec<(String, Yaml)> {
    files(DIR, &["yaml", "yml"])
        .into_iter()
        .filter(|f| !f.ends_with("kustomization.yaml"))
        .flat_map(|f| yaml(&f).into_iter().map(move |d| (f.clone(), d)))
        .collect()
}

fn find<'o>(objects: &'o [(String, Yaml)], kind: &str, name: &str) -> &'o Yaml {
    objects
        .iter()
        .map(|(_, o)| o)
        .find(|o| o["kind"].as_str() == Some(kind) && o["metadata"]["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("{DIR}: no {kind} {name}"))
}

fn labels(y: &Yaml) -> BTreeMap<&str, &str> {
    y.as_hash()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            (
                k.as_str().unwrap(),
                v.as_str().expect("label values are strings"),
            )
        })
        .collect()
}

/// Whether a selector picks pods with these labels.
fn selects(selector: &BTreeMap<&str, &str>, pod: &BTreeMap<&str, &str>) -> bool {
    !selector.is_empty() && selector.iter().all(|(k, v)| pod.get(k) == Some(v))
}

fn containers(deployment: &Yaml) -> Vec<&Yaml> {
    let spec = &deployment["spec"]["template"]["spec"];
    ["initContainers", "containers"]
        .iter()
        .flat_map(|k| spec[*k].as_vec().into_iter().flatten())
        .collect()
}

fn deployments(objects: &[(String, Yaml)]) -> Vec<&Yaml> {
    objects
        .iter()
        .map(|(_, o)| o)
        .filter(|o| o["kind"].as_str() == Some("Deployment"))
        .collect()
}

/// The environment a container gets: `env` values (literal or from a ConfigMap key) and every
/// key of its `envFrom` ConfigMaps.
fn environment(objects: &[(String, Yaml)], c: &Yaml, place: &str) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for from in c["envFrom"].as_vec().into_iter().flatten() {
        let name = from["configMapRef"]["name"]
            .as_str()
            .unwrap_or_else(|| panic!("{place}: envFrom without configMapRef"));
        let data = find(objects, "ConfigMap", name)["data"]
            .as_hash()
            .expect("ConfigMap data");
        for (k, v) in data {
            env.insert(
                k.as_str().unwrap().to_string(),
                v.as_str().unwrap().to_string(),
            );
        }
    }
    for e in c["env"].as_vec().into_iter().flatten() {
        let name = e["name"].as_str().expect("env name").to_string();
        let value = if let Some(v) = e["value"].as_str() {
            v.to_string()
        } else if let Some(r) = e["valueFrom"]["configMapKeyRef"].as_hash() {
            let map = r[&Yaml::String("name".into())].as_str().unwrap();
            let key = r[&Yaml::String("key".into())].as_str().unwrap();
            find(objects, "ConfigMap", map)["data"][key]
                .as_str()
                .unwrap_or_else(|| panic!("{place}: ConfigMap {map} has no key {key}"))
                .to_string()
        } else {
            assert!(
                !e["valueFrom"]["fieldRef"].is_badvalue(),
                "{place}: env {name}: a value, a ConfigMap key or a field"
            );
            "(field)".to_string()
        };
        env.insert(name, value);
    }
    env
}

fn container_port(c: &Yaml, port: &Yaml) -> Option<i64> {
    let ports = c["ports"].as_vec()?;
    match port {
        Yaml::Integer(n) => ports
            .iter()
            .find(|p| p["containerPort"].as_i64() == Some(*n))
            .map(|_| *n),
        Yaml::String(name) => ports
            .iter()
            .find(|p| p["name"].as_str() == Some(name))
            .and_then(|p| p["containerPort"].as_i64()),
        _ => None,
    }
}

#[test]
fn the_kustomization_lists_every_manifest() {
    let k = &yaml(&format!("{DIR}/kustomization.yaml"))[0];
    assert_eq!(k["kind"].as_str(), Some("Kustomization"));
    let mut listed: Vec<String> = strings(&k["resources"], "resources")
        .iter()
        .map(|r| format!("{DIR}/{r}"))
        .collect();
    listed.sort();
    let mut present: Vec<String> = files(DIR, &["yaml", "yml"])
        .into_iter()
        .filter(|f| !f.ends_with("kustomization.yaml"))
        .collect();
    present.sort();
    assert_eq!(listed, present);
    for (file, o) in objects() {
        for field in ["apiVersion", "kind"] {
            assert!(
                o[field].as_str().is_some(),
                "{file}: an object without {field}"
            );
        }
        assert!(
            o["metadata"]["name"].as_str().is_some(),
            "{file}: unnamed object"
        );
    }
}

#[test]
fn the_objects_are_there() {
    let all = objects();
    let mut kinds: Vec<(&str, &str)> = all
        .iter()
        .map(|(_, o)| {
            (
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    kinds.sort();
    for want in [
        ("ConfigMap", "npuzzle-coordinator"),
        ("ConfigMap", "npuzzle-worker"),
        ("Deployment", "npuzzle-coordinator"),
        ("Deployment", "npuzzle-worker"),
        ("Service", "npuzzle-coordinator"),
    ] {
        assert!(kinds.contains(&want), "{want:?} missing from {kinds:?}");
    }
    let coordinator = find(&all, "Deployment", "npuzzle-coordinator");
    assert_eq!(
        coordinator["spec"]["replicas"].as_i64(),
        Some(1),
        "one coordinator"
    );
    assert_eq!(
        coordinator["spec"]["strategy"]["type"].as_str(),
        Some("Recreate"),
        "never two coordinators at once"
    );
    let worker = find(&all, "Deployment", "npuzzle-worker");
    assert!(worker["spec"]["replicas"].as_i64().is_some_and(|n| n >= 1));
}

#[test]
fn selectors_match_the_pod_labels() {
    let all = objects();
    for d in deployments(&all) {
        let name = d["metadata"]["name"].as_str().unwrap();
        let selector = labels(&d["spec"]["selector"]["matchLabels"]);
        let pod = labels(&d["spec"]["template"]["metadata"]["labels"]);
        assert!(
            selects(&selector, &pod),
            "Deployment {name}: {selector:?} vs {pod:?}"
        );
        for other in deployments(&all) {
            if other["metadata"]["name"] != d["metadata"]["name"] {
                let theirs = labels(&other["spec"]["template"]["metadata"]["labels"]);
                assert!(
                    !selects(&selector, &theirs),
                    "Deployment {name} selects other pods too"
                );
            }
        }
    }
    let service = find(&all, "Service", "npuzzle-coordinator");
    let selector = labels(&service["spec"]["selector"]);
    let picked: Vec<&str> = deployments(&all)
        .into_iter()
        .filter(|d| {
            selects(
                &selector,
                &labels(&d["spec"]["template"]["metadata"]["labels"]),
            )
        })
        .map(|d| d["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(picked, ["npuzzle-coordinator"]);
}

#[test]
fn the_service_port_is_the_coordinators_and_the_readiness_probe_speaks_grpc_there() {
    let all = objects();
    let service = find(&all, "Service", "npuzzle-coordinator");
    let ports = service["spec"]["ports"].as_vec().expect("ports");
    let grpc = ports
        .iter()
        .find(|p| p["port"].as_i64() == Some(50051))
        .expect("Service port 50051");
    let coordinator = find(&all, "Deployment", "npuzzle-coordinator");
    let c = containers(coordinator)
        .into_iter()
        .find(|c| strings(&c["command"], "command")[0] == "npuzzle-coordinator")
        .expect("a container running npuzzle-coordinator");
    let target = container_port(c, &grpc["targetPort"]).expect("targetPort is a container port");
    let env = environment(&all, c, "coordinator");
    let listen = env.get("NPUZZLE_LISTEN").expect("NPUZZLE_LISTEN");
    assert_eq!(
        i64::from(listen_port(listen)),
        target,
        "NPUZZLE_LISTEN={listen}"
    );
    assert!(
        listen.starts_with("0.0.0.0:"),
        "listen on the pod's interfaces"
    );
    let ready = &c["readinessProbe"]["grpc"];
    assert_eq!(
        ready["port"].as_i64(),
        Some(target),
        "readinessProbe: grpc on {target}"
    );
    // Liveness: gRPC health or a TCP connection, on the same port.
    let live = &c["livenessProbe"];
    let live_port = live["grpc"]["port"]
        .as_i64()
        .or_else(|| container_port(c, &live["tcpSocket"]["port"]))
        .expect("livenessProbe: grpc or tcpSocket");
    assert_eq!(live_port, target);
    // Ready only once a worker has joined, and workers join through this Service.
    assert_eq!(
        service["spec"]["publishNotReadyAddresses"].as_bool(),
        Some(true),
        "workers could never reach a coordinator that is not ready"
    );
}

#[test]
fn workers_reach_the_coordinator_through_the_service() {
    let all = objects();
    let worker = find(&all, "Deployment", "npuzzle-worker");
    let c = containers(worker)
        .into_iter()
        .find(|c| strings(&c["command"], "command")[0] == "npuzzle-worker")
        .expect("a container running npuzzle-worker");
    let env = environment(&all, c, "worker");
    let url = env.get("NPUZZLE_COORDINATOR").expect("NPUZZLE_COORDINATOR");
    assert_eq!(url, "http://npuzzle-coordinator:50051");
    let (host, port) = host_port(url);
    let service = find(&all, "Service", &host);
    assert!(
        service["spec"]["ports"]
            .as_vec()
            .unwrap()
            .iter()
            .any(|p| p["port"].as_i64() == Some(i64::from(port))),
        "Service {host} has no port {port}"
    );
}

#[test]
fn every_container_runs_a_workspace_binary_with_variables_it_reads() {
    let ws = workspace();
    let all = objects();
    for d in deployments(&all) {
        for c in containers(d) {
            let place = format!(
                "Deployment {} container {}",
                d["metadata"]["name"].as_str().unwrap(),
                c["name"].as_str().unwrap()
            );
            let command = strings(&c["command"], &place);
            let binary = binary_of(&ws, command[0], &place).unwrap();
            for name in environment(&all, c, &place).keys() {
                ws.check_env(binary, name, &place).unwrap();
            }
            for kind in ["requests", "limits"] {
                for what in ["cpu", "memory"] {
                    assert!(
                        !c["resources"][kind][what].is_badvalue(),
                        "{place}: resources.{kind}.{what}"
                    );
                }
            }
            assert_eq!(
                c["securityContext"]["allowPrivilegeEscalation"].as_bool(),
                Some(false),
                "{place}"
            );
        }
        assert_eq!(
            d["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"].as_bool(),
            Some(true)
        );
    }
}

#[test]
fn configmap_values_are_strings() {
    for (file, o) in objects() {
        if o["kind"].as_str() != Some("ConfigMap") {
            continue;
        }
        for (k, v) in o["data"].as_hash().into_iter().flatten() {
            assert!(
                v.as_str().is_some(),
                "{file}: {k:?} is {v:?}: ConfigMap values must be quoted strings"
            );
        }
    }
}

#[test]
fn volume_mounts_name_pod_volumes_and_the_table_directory_is_one() {
    let all = objects();
    for d in deployments(&all) {
        let volumes: Vec<&str> = d["spec"]["template"]["spec"]["volumes"]
            .as_vec()
            .into_iter()
            .flatten()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        for c in containers(d) {
            let mounts: Vec<&str> = c["volumeMounts"]
                .as_vec()
                .into_iter()
                .flatten()
                .map(|m| {
                    let name = m["name"].as_str().unwrap();
                    assert!(volumes.contains(&name), "volumeMount {name} has no volume");
                    m["mountPath"].as_str().unwrap()
                })
                .collect();
            let place = c["name"].as_str().unwrap();
            if let Some(dir) = environment(&all, c, place).get("NPUZZLE_PDB_DIR") {
                assert!(
                    mounts.contains(&dir.as_str()),
                    "container {place}: NPUZZLE_PDB_DIR={dir} is not a mounted volume"
                );
            }
        }
    }
}
