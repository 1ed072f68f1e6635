//! The house rules that nothing else checks, so that they stay true: no Rust file over 1,000
//! lines, no document under `docs/` over 48 KB, and every module map (a `# Layout` or `# Parts`
//! section of a crate's or folder's module doc) names every module declared beside it.

use std::path::Path;

use crate::common::{files, read, root, workspace};

/// The most lines a Rust file may have: past it, split it on the seams it has.
const MAX_RUST_LINES: usize = 1_000;

/// The most bytes a document under `docs/` may have: dated sittings go to `docs/benchmarks/`,
/// one file per series.
const MAX_DOC_BYTES: u64 = 48 * 1024;

/// The Rust files of every workspace member (sources, tests, examples, benches, build scripts).
fn rust_files() -> Vec<String> {
    let mut all: Vec<String> = workspace()
        .members
        .iter()
        .flat_map(|m| files(&m.dir, &["rs"]))
        .collect();
    all.sort();
    all.dedup();
    all
}

#[test]
fn no_rust_file_is_over_a_thousand_lines() {
    let files = rust_files();
    assert!(files.len() > 50, "the walk found the sources: {files:?}");
    let long: Vec<String> = files
        .iter()
        .map(|f| (f, read(f).lines().count()))
        .filter(|&(_, lines)| lines > MAX_RUST_LINES)
        .map(|(f, lines)| format!("{f}: {lines} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "split these on their seams (at most {MAX_RUST_LINES} lines a file): {long:#?}"
    );
}

#[test]
fn no_document_under_docs_is_over_48_kb() {
    let docs = files("docs", &["md"]);
    assert!(
        docs.iter().any(|d| d == "docs/performance.md"),
        "the walk found the docs: {docs:?}"
    );
    let large: Vec<String> = docs
        .iter()
        .map(|d| {
            let bytes = std::fs::metadata(root().join(d))
                .unwrap_or_else(|e| panic!("{d}: {e}"))
                .len();
            (d, bytes)
        })
        .filter(|&(_, bytes)| bytes > MAX_DOC_BYTES)
        .map(|(d, bytes)| format!("{d}: {bytes} bytes"))
        .collect();
    assert!(
        large.is_empty(),
        "at most {MAX_DOC_BYTES} bytes a document (move dated sittings to docs/benchmarks/): {large:#?}"
    );
}

/// The modules a Rust file declares (`mod x;`, `pub mod x;`, `pub(crate) mod x;`, ...), tests
/// modules left out.
fn declared_modules(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("mod ")
                .or_else(|| line.strip_prefix("pub mod "))
                .or_else(|| {
                    line.strip_prefix("pub(")
                        .and_then(|r| r.split_once(") mod "))
                        .map(|(_, name)| name)
                })?;
            let name = rest.strip_suffix(';')?;
            (name != "tests").then(|| name.to_string())
        })
        .collect()
}

/// The text of a file's module map: its `//! # Layout` (or `//! # Parts`) section, up to the
/// next heading of the module doc.
fn module_map(source: &str) -> Option<String> {
    let doc: Vec<&str> = source
        .lines()
        .take_while(|l| l.starts_with("//!") || l.trim().is_empty())
        .filter_map(|l| l.strip_prefix("//!"))
        .map(str::trim)
        .collect();
    let start = doc
        .iter()
        .position(|l| *l == "# Layout" || *l == "# Parts")?;
    let section = doc[start + 1..]
        .iter()
        .take_while(|l| !l.starts_with('#'))
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    Some(section)
}

/// Whether a module map names module `name`: as `name`, `name.rs`, `name/` or a link to it.
fn names(map: &str, name: &str) -> bool {
    [
        format!("`{name}`"),
        format!("`{name}.rs`"),
        format!("`{name}/`"),
        format!("{name}.rs"),
        format!("[`{name}`]"),
        format!("[`{name}::"),
        format!("`{name}::"),
        format!("({name})"),
        format!("({name}::"),
    ]
    .iter()
    .any(|form| map.contains(form.as_str()))
}

#[test]
fn every_module_map_names_every_module_beside_it() {
    let mut maps = 0;
    let mut missing = Vec::new();
    for file in rust_files() {
        let source = read(&file);
        let Some(map) = module_map(&source) else {
            continue;
        };
        maps += 1;
        for module in declared_modules(&source) {
            if !names(&map, &module) {
                missing.push(format!("{file}: `{module}`"));
            }
        }
    }
    assert!(maps >= 8, "the crates' maps were found ({maps})");
    assert!(
        missing.is_empty(),
        "name each in its file's `# Layout` (or `# Parts`) section: {missing:#?}"
    );
}

#[test]
fn the_map_check_reads_declarations_and_maps_as_written() {
    let source = "//! The crate.\n//!\n//! # Layout\n//!\n//! - [`alpha`]: a;\n//! - `beta.rs`: b.\n//!\n//! # Example\n//! `gamma`\n\nmod alpha;\npub mod beta;\npub(crate) mod gamma;\n#[cfg(test)]\nmod tests;\n";
    assert_eq!(declared_modules(source), ["alpha", "beta", "gamma"]);
    let map = module_map(source).expect("a map");
    assert!(names(&map, "alpha") && names(&map, "beta"));
    assert!(
        !names(&map, "gamma"),
        "the example below the map does not count"
    );
    assert!(Path::new(&root()).join("Cargo.toml").exists());
}
