//! `npuzzle pdb build` writes verified tables; `--heuristic pdb` uses them, refuses clearly when
//! they are missing or corrupt, and `auto` picks them up once present: in-process (`--serial`)
//! and through the embedded cluster, whose worker serves the tables of `--pdb-dir`.

use crate::common::{npuzzle, records};
use npuzzle_cluster::testing::assert_optimal;
use npuzzle_cluster::testing::korf::korf;
use npuzzle_solver::{Goal, Shape};

fn temp_dir(name: &str) -> String {
    let d = std::env::temp_dir().join(format!("npuzzle-cli-pdb-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d.to_string_lossy().into_owned()
}

/// `npuzzle solve BOARD --serial --heuristic pdb --pdb-dir DIR`.
fn solve_serial_pdb(board: &str, dir: &str) -> crate::common::Output {
    npuzzle(
        &[
            "solve",
            board,
            "--serial",
            "--heuristic",
            "pdb",
            "--pdb-dir",
            dir,
        ],
        "",
    )
}

/// `npuzzle pdb build` of the 3x3 4-4 tables into `dir`.
fn build_3x3_tables(dir: &str) -> crate::common::Output {
    npuzzle(
        &[
            "pdb",
            "build",
            "--size",
            "3x3",
            "--partition",
            "4-4",
            "--pdb-dir",
            dir,
        ],
        "",
    )
}

#[test]
fn build_then_solve_with_pattern_databases() {
    let dir = temp_dir("build");
    let board = "8 6 7 2 5 4 3 0 1";
    let missing = solve_serial_pdb(board, &dir);
    assert_eq!(missing.code, 1);
    assert!(
        missing.stderr.contains("no pattern databases for 3x3"),
        "{}",
        missing.stderr
    );
    assert!(
        missing
            .stderr
            .contains("npuzzle pdb build --size 3x3 --partition 4-4"),
        "{}",
        missing.stderr
    );

    let built = build_3x3_tables(&dir);
    assert_eq!(built.code, 0, "{}", built.stderr);
    assert!(built.stdout.contains("3x3-4-4-0.pdb"), "{}", built.stdout);
    assert!(
        built.stderr.is_empty(),
        "no progress bar when stderr is not a terminal: {}",
        built.stderr
    );

    let out = solve_serial_pdb(board, &dir);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let goal = Goal::blank_last(Shape::new(3, 3).unwrap());
    assert_optimal(board, &goal, out.stdout.trim(), 31);

    let list = npuzzle(&["pdb", "list", "--pdb-dir", &dir], "");
    assert!(list.stdout.contains("3x3 4-4: ok"), "{}", list.stdout);

    // A corrupted table is refused, never trusted.
    let path = std::path::Path::new(&dir).join("3x3-4-4-1.pdb");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let out = solve_serial_pdb(board, &dir);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("checksum"), "{}", out.stderr);
    let list = npuzzle(&["pdb", "list", "--pdb-dir", &dir], "");
    assert!(list.stdout.contains("checksum mismatch"), "{}", list.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn upgrade_rewrites_older_table_files_in_the_current_format() {
    let dir = temp_dir("upgrade");
    let shape = Shape::new(3, 3).unwrap();
    let built = build_3x3_tables(&dir);
    assert_eq!(built.code, 0, "{}", built.stderr);
    // Table 0 as an older build wrote it: one byte an entry.
    let old = std::path::Path::new(&dir).join("3x3-4-4-0.pdb");
    let db = npuzzle_solver::PatternDb::build(shape, &[1, 2, 3, 4], |_, _| {}).unwrap();
    std::fs::write(&old, db.to_bytes_format_2()).unwrap();
    let format = |path: &std::path::Path| {
        npuzzle_solver::PatternDb::format_of(std::fs::File::open(path).unwrap())
    };
    assert_eq!(format(&old), Some(2));

    let list = npuzzle(&["pdb", "list", "--pdb-dir", &dir], "");
    assert!(
        list.stdout.contains("3x3 4-4: ok, in an older format")
            && list.stdout.contains("npuzzle pdb upgrade"),
        "{}",
        list.stdout
    );
    let board = "8 6 7 2 5 4 3 0 1";
    let solve = || solve_serial_pdb(board, &dir);
    let goal = Goal::blank_last(shape);
    let out = solve();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_optimal(board, &goal, out.stdout.trim(), 31);

    let upgraded = npuzzle(&["pdb", "upgrade", "--pdb-dir", &dir], "");
    assert_eq!(upgraded.code, 0, "{}", upgraded.stderr);
    assert!(
        upgraded.stdout.contains(&format!(
            "3x3-4-4-0.pdb: rewritten in format {}",
            npuzzle_solver::PDB_FORMAT
        )) && !upgraded.stdout.contains("3x3-4-4-1.pdb"),
        "{}",
        upgraded.stdout
    );
    assert_eq!(format(&old), Some(npuzzle_solver::PDB_FORMAT));
    // The rewritten file is the table a fresh build writes.
    assert_eq!(std::fs::read(&old).unwrap(), db.to_bytes());
    let list = npuzzle(&["pdb", "list", "--pdb-dir", &dir], "");
    assert!(list.stdout.contains("3x3 4-4: ok\n"), "{}", list.stdout);
    let out = solve();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_optimal(board, &goal, out.stdout.trim(), 31);

    let again = npuzzle(&["pdb", "upgrade", "--pdb-dir", &dir], "");
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stdout.contains(&format!(
            "every table is in the format this build writes already ({} per placement",
            npuzzle_solver::PDB_FORMAT
        )),
        "{}",
        again.stdout
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_partitions_are_usage_errors() {
    let out = npuzzle(&["pdb", "build", "--size", "4x4", "--partition", "9-9"], "");
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("no partition \"9-9\" for 4x4"),
        "{}",
        out.stderr
    );
}

/// Korf instances that take linear conflict more nodes than the coordinator's probe allows
/// (200 k), so that the workers search them.
const PAST_THE_PROBE: [usize; 3] = [13, 73, 85];

#[test]
fn the_embedded_cluster_serves_pattern_databases() {
    let dir = temp_dir("embedded");
    let goal = Goal::blank_first(Shape::new(4, 4).unwrap());
    let instances = korf(&PAST_THE_PROBE);
    let (_, optimal, tiles) = &instances[0];
    let solve_pdb = |tiles: &str| {
        npuzzle(
            &[
                "solve",
                tiles,
                "--goal",
                "blank-first",
                "--heuristic",
                "pdb",
                "--pdb-dir",
                &dir,
                "--json",
            ],
            "",
        )
    };

    // No tables: the embedded worker serves none, and the coordinator says how to build them.
    let missing = solve_pdb(tiles);
    assert_eq!(missing.code, 1, "{}", missing.stderr);
    let v: serde_json::Value = serde_json::from_str(&missing.stdout).unwrap();
    let error = v["error"].as_str().unwrap();
    assert!(
        error.contains("no connected worker has pattern databases for 4x4 boards"),
        "{error}"
    );
    assert!(
        error.contains("npuzzle pdb build --size 4x4 --partition"),
        "{error}"
    );

    let built = npuzzle(
        &[
            "pdb",
            "build",
            "--size",
            "4x4",
            "--partition",
            "5-5-5",
            "--pdb-dir",
            &dir,
        ],
        "",
    );
    assert_eq!(built.code, 0, "{}", built.stderr);

    let out = solve_pdb(tiles);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let moves = v["moves"].as_str().unwrap();
    assert_optimal(tiles, &goal, moves, *optimal);

    // A batch, with pdb, auto (which the coordinator resolves to pdb) and lc.
    let input: String = instances.iter().map(|(_, _, t)| format!("{t}\n")).collect();
    let batch = |heuristic: &str| {
        let out = npuzzle(
            &[
                "batch",
                "--goal",
                "blank-first",
                "--heuristic",
                heuristic,
                "--pdb-dir",
                &dir,
                "--output",
                "jsonl",
            ],
            &input,
        );
        assert_eq!(out.code, 0, "{heuristic}: {}", out.stderr);
        let answers = records(&out.stdout);
        assert_eq!(answers.len(), instances.len());
        let mut nodes = 0;
        for ((_, optimal, tiles), answer) in instances.iter().zip(&answers) {
            let moves = answer["moves"].as_str().unwrap();
            assert_optimal(tiles, &goal, moves, *optimal);
            nodes += answer["nodes"].as_u64().unwrap();
        }
        nodes
    };
    let pdb = batch("pdb");
    let auto = batch("auto");
    let lc = batch("lc");
    assert!(pdb * 2 < lc, "pdb {pdb} nodes, lc {lc}");
    assert!(
        auto * 2 < lc,
        "auto {auto} nodes, lc {lc}: auto did not use the tables"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// With no partition named, `pdb build` builds what the size's strongest heuristic needs (for
/// 3x3 the 4-4 tables), and the solver then uses them.
#[test]
fn build_without_a_partition_builds_the_strongest_for_the_size() {
    let dir = temp_dir("default-partition");
    let built = npuzzle(&["pdb", "build", "--size", "3x3", "--pdb-dir", &dir], "");
    assert_eq!(built.code, 0, "{}", built.stderr);
    assert!(built.stdout.contains("3x3 4-4:"), "{}", built.stdout);
    let solved = solve_serial_pdb("8 6 7 2 5 4 3 0 1", &dir);
    assert_eq!(solved.code, 0, "{}", solved.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}
