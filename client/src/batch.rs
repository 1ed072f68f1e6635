//! Batch solving: a stream of boards in, one answer per board out, **in input order**, with the
//! boards solved on several threads. Memory stays bounded: at most a few boards per thread are
//! in flight, whatever the input's size.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};
use std::str::FromStr;
use std::sync::mpsc::{Receiver, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::engine::{Engine, Record, Settings, Status};
use crate::input::{Format, Item, Reader};

/// How answers are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// The judge's format for the input format (see [`text_line`]).
    #[default]
    Text,
    /// One JSON object per board.
    Jsonl,
}

impl FromStr for OutputFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "text" => Ok(OutputFormat::Text),
            "jsonl" | "json" => Ok(OutputFormat::Jsonl),
            _ => Err(format!("unknown output {s:?}: expected text or jsonl")),
        }
    }
}

/// A batch run's settings.
#[derive(Clone, Debug, Default)]
pub struct BatchOptions {
    pub format: Format,
    pub output: OutputFormat,
    pub settings: Settings,
    /// Solver threads; 0 means one per core.
    pub jobs: usize,
}

/// Counts over a whole batch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub solved: usize,
    pub unsolvable: usize,
    pub invalid: usize,
    pub nodes: u64,
    pub elapsed: Duration,
}

impl Summary {
    pub fn total(&self) -> usize {
        self.solved + self.unsolvable + self.invalid
    }

    pub(crate) fn add(&mut self, r: &Record) {
        match r.status {
            Status::Solved => self.solved += 1,
            Status::Unsolvable => self.unsolvable += 1,
            Status::Invalid => self.invalid += 1,
        }
        self.nodes += r.nodes;
    }
}

/// One answer in the judge's text format for `format`: upper-case moves (lower-case for
/// `poj1077`), `unsolvable` (`This puzzle is not solvable.` for `uva10181`), or
/// `invalid: <reason>`.
pub fn text_line(record: &Record, format: Format) -> String {
    match record.status {
        Status::Solved => {
            let moves = record.moves.clone().unwrap_or_default();
            if format == Format::Poj1077 {
                moves.to_ascii_lowercase()
            } else {
                moves
            }
        }
        Status::Unsolvable if format == Format::Uva10181 => "This puzzle is not solvable.".into(),
        Status::Unsolvable => "unsolvable".into(),
        Status::Invalid => format!("invalid: {}", record.error.as_deref().unwrap_or("")),
    }
}

fn solve_item(engine: &mut Engine, item: &Item) -> Record {
    let mut record = match &item.error {
        Some(e) => Record::invalid(item.index, e.clone()),
        None => engine.solve_text(item.index, &item.text, item.shape),
    };
    if let Some(e) = record.error.as_mut() {
        *e = format!("line {}: {e}", item.line);
    }
    record
}

/// Reads boards from `input`, solves them on `options.jobs` threads and writes one answer per
/// board to `out` in input order.
pub fn run<R: BufRead, W: Write + Send>(
    input: R,
    out: W,
    options: &BatchOptions,
) -> io::Result<Summary> {
    let started = Instant::now();
    let jobs = match options.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let (work_tx, work_rx) = sync_channel::<(Item, Format)>(jobs * 4);
    let work_rx = Arc::new(Mutex::new(work_rx));
    let (done_tx, done_rx) = sync_channel::<(Record, Format)>(jobs * 4);

    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let work_rx = Arc::clone(&work_rx);
            let done_tx = done_tx.clone();
            let settings = options.settings.clone();
            scope.spawn(move || {
                let mut engine = Engine::new(settings);
                loop {
                    let next = match work_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => break,
                    };
                    let Ok((item, format)) = next else { break };
                    let record = solve_item(&mut engine, &item);
                    if done_tx.send((record, format)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        let output = options.output;
        let writer = scope.spawn(move || write_in_order(done_rx, out, output));

        let mut reader = Reader::new(input, options.format);
        let mut read_error = None;
        while let Some(item) = reader.next() {
            match item {
                Ok(item) => {
                    if work_tx.send((item, reader.format())).is_err() {
                        break;
                    }
                }
                Err(e) => {
                    read_error = Some(e);
                    break;
                }
            }
        }
        drop(work_tx);
        let summary = writer
            .join()
            .map_err(|_| io::Error::other("the output thread panicked"))?;
        if let Some(e) = read_error {
            return Err(e);
        }
        let mut summary = summary?;
        summary.elapsed = started.elapsed();
        Ok(summary)
    })
}

/// Writes one answer as `output` says.
pub fn write_record<W: Write>(
    out: &mut W,
    record: &Record,
    format: Format,
    output: OutputFormat,
) -> io::Result<()> {
    match output {
        OutputFormat::Text => writeln!(out, "{}", text_line(record, format)),
        OutputFormat::Jsonl => {
            serde_json::to_writer(&mut *out, record)?;
            writeln!(out)
        }
    }
}

fn write_in_order<W: Write>(
    done: Receiver<(Record, Format)>,
    mut out: W,
    output: OutputFormat,
) -> io::Result<Summary> {
    let mut summary = Summary::default();
    let mut waiting = BTreeMap::new();
    let mut next = 0usize;
    for (record, format) in done {
        waiting.insert(record.index, (record, format));
        while let Some((record, format)) = waiting.remove(&next) {
            summary.add(&record);
            write_record(&mut out, &record, format, output)?;
            next += 1;
        }
        // Flush once the answers ready so far are written, so a reader sees progress.
        if waiting.is_empty() {
            out.flush()?;
        }
    }
    out.flush()?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(input: &str, options: &BatchOptions) -> (String, Summary) {
        let mut out = Vec::new();
        let summary = run(input.as_bytes(), &mut out, options).unwrap();
        (String::from_utf8(out).unwrap(), summary)
    }

    #[test]
    fn answers_come_out_in_input_order_with_bad_lines_reported() {
        let input = "1 2 3 4 5 6 7 8 0\n2 1 3 4 5 6 7 8 0\n1 2 3 4 5 6 7 8 8\n1 2 3 4 5 6 0 7 8\n";
        let options = BatchOptions {
            jobs: 3,
            ..BatchOptions::default()
        };
        let (out, summary) = batch(input, &options);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "");
        assert_eq!(lines[1], "unsolvable");
        assert_eq!(
            lines[2],
            "invalid: line 3: duplicate tile 8: at positions 7 and 8"
        );
        assert_eq!(lines[3], "RR");
        assert_eq!(
            (summary.solved, summary.unsolvable, summary.invalid),
            (2, 1, 1)
        );
    }
}
