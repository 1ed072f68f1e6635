//! Batch solving: a stream of boards in, one answer per board out, **in input order**, with the
//! boards solved on several threads. Memory stays bounded: at most a few boards per thread are
//! in flight, whatever the input's size.

use std::collections::{BTreeMap, HashSet};
use std::io::{self, BufRead, Write};
use std::sync::mpsc::{Receiver, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::engine::{Answer, Engine, Settings};
use crate::input::{Format, Item, Reader};

pub use crate::sink::{OutputFormat, Sink, Summary, text_line};

/// A batch run's settings.
#[derive(Clone, Debug, Default)]
pub struct BatchOptions {
    pub format: Format,
    pub settings: Settings,
    /// Solver threads; 0 means one per core.
    pub jobs: usize,
    /// Input indices answered by an earlier run (`--resume`): skipped.
    pub skip: HashSet<usize>,
}

fn solve_item(engine: &mut Engine, item: &Item) -> Answer {
    let mut record = match &item.error {
        Some(e) => Answer::invalid(item.index, e.clone()),
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
    sink: Sink<W>,
    options: &BatchOptions,
) -> io::Result<Summary> {
    let started = Instant::now();
    let jobs = match options.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    // Items travel with their sequence number among the boards dispatched, which orders the
    // output even when `--resume` leaves gaps in the input indices.
    let (work_tx, work_rx) = sync_channel::<(usize, Item, Format)>(jobs * 4);
    let work_rx = Arc::new(Mutex::new(work_rx));
    let (done_tx, done_rx) = sync_channel::<(usize, Answer, Format)>(jobs * 4);

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
                    let Ok((seq, item, format)) = next else { break };
                    let record = solve_item(&mut engine, &item);
                    if done_tx.send((seq, record, format)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        let writer = scope.spawn(move || write_in_order(done_rx, sink));

        let mut reader = Reader::new(input, options.format);
        let mut read_error = None;
        let mut seq = 0;
        while let Some(item) = reader.next() {
            match item {
                Ok(item) if options.skip.contains(&item.index) => {}
                Ok(item) => {
                    if work_tx.send((seq, item, reader.format())).is_err() {
                        break;
                    }
                    seq += 1;
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

fn write_in_order<W: Write>(
    done: Receiver<(usize, Answer, Format)>,
    mut sink: Sink<W>,
) -> io::Result<Summary> {
    let mut waiting = BTreeMap::new();
    let mut next = 0usize;
    for (seq, record, format) in done {
        waiting.insert(seq, (record, format));
        while let Some((record, format)) = waiting.remove(&next) {
            sink.write(&record, format)?;
            next += 1;
        }
        // Flush once the answers ready so far are written, so a reader sees progress.
        if waiting.is_empty() {
            sink.flush()?;
        }
    }
    sink.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(input: &str, options: &BatchOptions) -> (String, Summary) {
        let mut out = Vec::new();
        let sink = Sink::new(&mut out, OutputFormat::Text, false);
        let summary = run(input.as_bytes(), sink, options).unwrap();
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
