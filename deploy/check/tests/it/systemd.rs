//! deploy/systemd: units whose ExecStart runs this workspace's binaries, read their settings from
//! /etc/npuzzle/*.env (samples beside them hold only variables the binary reads), restart on
//! failure and run hardened.

use std::collections::BTreeMap;

use crate::common::{binary_of, files, read, workspace};

const DIR: &str = "deploy/systemd";

/// A unit file: section → (key, value) in order (keys may repeat).
type Unit = BTreeMap<String, Vec<(String, String)>>;

fn parse_unit(file: &str) -> Unit {
    let mut unit = Unit::new();
    let mut section: Option<String> = None;
    for (n, line) in read(file).lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        assert!(
            !line.ends_with('\\'),
            "{file}:{}: keep each setting on one line",
            n + 1
        );
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = Some(name.to_string());
            unit.entry(name.to_string()).or_default();
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("{file}:{}: not `Key=value`: {line}", n + 1));
        let section = section
            .as_ref()
            .unwrap_or_else(|| panic!("{file}:{}: a setting before any [Section]", n + 1));
        unit.get_mut(section)
            .unwrap()
            .push((k.trim().to_string(), v.trim().to_string()));
    }
    unit
}

fn values<'u>(unit: &'u Unit, section: &str, key: &str) -> Vec<&'u str> {
    unit.get(section)
        .into_iter()
        .flatten()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .collect()
}

fn one<'u>(unit: &'u Unit, file: &str, section: &str, key: &str) -> &'u str {
    match values(unit, section, key).as_slice() {
        [v] => v,
        other => panic!("{file}: [{section}] {key} should be set once, found {other:?}"),
    }
}

/// `KEY=value` lines of an environment file.
fn env_file(file: &str) -> Vec<(String, String)> {
    read(file)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("{file}: not KEY=value: {l}"));
            assert!(
                !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'),
                "{file}: bad variable name {k:?}"
            );
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn units() -> Vec<String> {
    files(DIR, &["service"])
}

#[test]
fn a_coordinator_unit_and_a_worker_template() {
    let names: Vec<String> = units()
        .iter()
        .map(|f| f.rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        ["npuzzle-coordinator.service", "npuzzle-worker@.service"]
    );
    let worker = parse_unit(&format!("{DIR}/npuzzle-worker@.service"));
    let uses_instance = worker.values().flatten().any(|(_, v)| v.contains("%i"));
    assert!(uses_instance, "the worker template names its instance (%i)");
}

#[test]
fn exec_start_runs_a_workspace_binary_with_its_environment_file() {
    let ws = workspace();
    for file in units() {
        let unit = parse_unit(&file);
        let exec = one(&unit, &file, "Service", "ExecStart");
        let program = exec.split_whitespace().next().unwrap();
        assert!(
            program.starts_with('/'),
            "{file}: ExecStart needs an absolute path"
        );
        let binary = binary_of(&ws, program, &file).unwrap();
        assert!(
            file.contains(binary),
            "{file} runs {binary}: the unit is named after its binary"
        );
        let env_files = values(&unit, "Service", "EnvironmentFile");
        let required: Vec<&str> = env_files
            .iter()
            .filter(|f| !f.starts_with('-'))
            .copied()
            .collect();
        assert!(!required.is_empty(), "{file}: an EnvironmentFile");
        for path in env_files {
            let path = path.trim_start_matches('-');
            assert!(path.starts_with("/etc/npuzzle/"), "{file}: {path}");
        }
        for path in required {
            let sample = format!("{DIR}/{}", path.rsplit('/').next().unwrap());
            assert!(
                crate::common::root().join(&sample).is_file(),
                "{file}: {path} has no sample {sample}"
            );
            for (name, _) in env_file(&sample) {
                ws.check_env(binary, &name, &sample).unwrap();
            }
        }
        for setting in values(&unit, "Service", "Environment") {
            let name = setting.split('=').next().unwrap();
            ws.check_env(binary, name, &file).unwrap();
        }
    }
}

#[test]
fn units_restart_on_failure_and_are_hardened() {
    for file in units() {
        let unit = parse_unit(&file);
        assert!(!one(&unit, &file, "Unit", "Description").is_empty());
        for (key, want) in [
            ("Restart", "on-failure"),
            ("NoNewPrivileges", "yes"),
            ("ProtectSystem", "strict"),
            ("ProtectHome", "yes"),
            ("PrivateTmp", "yes"),
        ] {
            assert_eq!(one(&unit, &file, "Service", key), want, "{file}: {key}");
        }
        let dynamic = values(&unit, "Service", "DynamicUser") == ["yes"];
        let user = values(&unit, "Service", "User");
        assert!(
            dynamic || user.iter().any(|u| *u != "root" && *u != "0"),
            "{file}: DynamicUser=yes or a User other than root"
        );
        assert_eq!(
            one(&unit, &file, "Service", "CapabilityBoundingSet"),
            "",
            "{file}: no capabilities"
        );
        assert_eq!(
            one(&unit, &file, "Install", "WantedBy"),
            "multi-user.target"
        );
    }
}

#[test]
fn env_samples_parse_and_listen_everywhere() {
    let coordinator: BTreeMap<String, String> = env_file(&format!("{DIR}/coordinator.env"))
        .into_iter()
        .collect();
    let listen = &coordinator["NPUZZLE_LISTEN"];
    assert!(
        listen.starts_with("0.0.0.0:"),
        "{listen}: reachable from worker machines"
    );
    let worker: BTreeMap<String, String> =
        env_file(&format!("{DIR}/worker.env")).into_iter().collect();
    let (_, port) = crate::common::host_port(&worker["NPUZZLE_COORDINATOR"]);
    assert_eq!(port, crate::common::listen_port(listen));
}
