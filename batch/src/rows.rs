//! Reading the rows of a batch: JSON Lines (one JSON value a line) or CSV (a header
//! line, then one record a line; every value a string). A row that cannot be read is not
//! an error of the batch: it becomes a [`Row`] whose input is the [`RowError`] saying why,
//! and fails on its own.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::result::RowError;

/// One row: its position, its id and its input (or why it could not be read).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The position in the input, from 0.
    pub index: u64,
    /// The `id` member of an object row (a string or a number), else the line number
    /// (JSON Lines) or the record number (CSV, from 1 after the header; blank lines and
    /// line breaks inside quotes do not count).
    pub id: Value,
    /// The run's input: the whole row.
    pub input: Result<Value, RowError>,
}

impl Row {
    /// A row from a value: its id is its `id` member when that is a string or a number,
    /// else `number` (its line or record number).
    pub fn new(index: u64, number: u64, input: Value) -> Row {
        let id = match input.get("id") {
            Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
            _ => Value::from(number),
        };
        Row {
            index,
            id,
            input: Ok(input),
        }
    }
}

/// How the input is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// One JSON value a line; blank lines are skipped.
    Jsonl,
    /// A header line naming the columns, then one record a line: each row is an object
    /// of strings, keyed by the header.
    Csv,
}

impl InputFormat {
    /// The format a file name says: `.csv` is CSV, anything else JSON Lines.
    pub fn of(path: &Path) -> InputFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => InputFormat::Csv,
            _ => InputFormat::Jsonl,
        }
    }
}

/// The rows of an input, and the SHA-256 of its bytes (what a journal checks a restart
/// against).
pub struct Input {
    /// The rows, in order.
    pub rows: Box<dyn Iterator<Item = Row> + Send>,
    /// The SHA-256 of the input's bytes, in hex.
    pub sha256: String,
    /// About how many rows there are (lines, less a CSV header; blank lines and quoted
    /// line breaks make it a little off): for progress estimates only.
    pub approx_rows: u64,
}

impl Input {
    /// Opens `path` (`None`: standard input, read to its end first). The file is read
    /// twice: once for its digest, then row by row.
    pub fn open(path: Option<&Path>, format: InputFormat) -> std::io::Result<Input> {
        match path {
            Some(path) => {
                let (mut hasher, mut lines, mut last) = (Sha256::new(), 0u64, b'\n');
                let mut file = File::open(path)?;
                let mut buf = vec![0u8; 1 << 16];
                loop {
                    let n = file.read(&mut buf)?;
                    if n == 0 {
                        break;
                    }
                    hasher.update(&buf[..n]);
                    lines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
                    last = buf[n - 1];
                }
                lines += u64::from(last != b'\n');
                let file = BufReader::new(File::open(path)?);
                Ok(Input::of(file, format, hex(&hasher.finalize()), lines))
            }
            None => {
                let mut bytes = Vec::new();
                std::io::stdin().lock().read_to_end(&mut bytes)?;
                Ok(Input::from_bytes(bytes, format))
            }
        }
    }

    /// The rows of `bytes`.
    pub fn from_bytes(bytes: Vec<u8>, format: InputFormat) -> Input {
        let sha256 = hex(&Sha256::digest(&bytes));
        let mut lines = bytes.iter().filter(|b| **b == b'\n').count() as u64;
        lines += u64::from(bytes.last().is_some_and(|b| *b != b'\n'));
        Input::of(std::io::Cursor::new(bytes), format, sha256, lines)
    }

    fn of(
        reader: impl BufRead + Send + 'static,
        format: InputFormat,
        sha256: String,
        lines: u64,
    ) -> Input {
        let rows: Box<dyn Iterator<Item = Row> + Send> = match format {
            InputFormat::Jsonl => Box::new(jsonl(reader)),
            InputFormat::Csv => Box::new(csv_rows(reader)),
        };
        let approx_rows = match format {
            InputFormat::Jsonl => lines,
            InputFormat::Csv => lines.saturating_sub(1),
        };
        Input {
            rows,
            sha256,
            approx_rows,
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The rows of a JSON Lines text.
fn jsonl(mut reader: impl BufRead + Send) -> impl Iterator<Item = Row> + Send {
    let (mut line_no, mut index) = (0u64, 0u64);
    let mut buf = Vec::new();
    std::iter::from_fn(move || loop {
        buf.clear();
        line_no += 1;
        let at = Some(format!("line {line_no}"));
        let input = match reader.read_until(b'\n', &mut buf) {
            Ok(0) => return None,
            Ok(_) => {
                if buf.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                // A byte order mark (Windows tools write one) is not part of the row.
                let bytes = match buf.strip_prefix("\u{feff}".as_bytes()) {
                    Some(rest) if line_no == 1 => rest,
                    _ => &buf[..],
                };
                match std::str::from_utf8(bytes) {
                    Err(e) => Err(RowError::new(
                        RowError::INVALID_ROW,
                        format!("the line is not UTF-8 (at byte {})", e.valid_up_to()),
                        at,
                    )),
                    // As strictly as `packc run --input`: a key given twice, or an
                    // integer past 64 bits (read as a rounded double), fails the row.
                    Ok(text) => match packc_host::json_arg::parse(text) {
                        Err(e) => {
                            // Plain text is the common mistake: say how a text row is written.
                            let hint = match text.trim_start().chars().next() {
                                Some('{' | '[' | '"') | None => "",
                                Some(_) => "; each line is one JSON value: write a text row as a JSON string (\"...\") or an object ({\"text\": \"...\"})",
                            };
                            Err(RowError::new(
                                RowError::INVALID_ROW,
                                format!("the line is not JSON: {e}{hint}"),
                                at,
                            ))
                        }
                        Ok(parsed) => match parsed.rounded {
                            Some(n) => Err(RowError::new(
                                RowError::INVALID_ROW,
                                format!(
                                    "the integer {n} does not fit in 64 bits and would be rounded: give it as a string"
                                ),
                                at,
                            )),
                            None => Ok(parsed.value),
                        },
                    },
                }
            }
            Err(e) => Err(RowError::new(
                RowError::INVALID_ROW,
                format!("cannot read the line: {e}"),
                at,
            )),
        };
        let row = match input {
            Ok(v) => Row::new(index, line_no, v),
            Err(e) => Row {
                index,
                id: Value::from(line_no),
                input: Err(e),
            },
        };
        index += 1;
        return Some(row);
    })
}

/// A reader that remembers the last byte it read that is not whitespace: a CSV text
/// whose last record holds a line break in a field (so a quote opened it) and that does
/// not end in a quote never closed that quote.
struct LastByte<R> {
    inner: R,
    last: std::sync::Arc<std::sync::atomic::AtomicU8>,
}

impl<R: Read> Read for LastByte<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(b) = buf[..n].iter().rev().find(|b| !b.is_ascii_whitespace()) {
            self.last.store(*b, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(n)
    }
}

/// Whether a record holds a field with a line break: one a quote opened.
fn spans_lines(rec: &csv::StringRecord) -> bool {
    rec.iter().any(|f| f.contains('\n'))
}

/// The failure of a record a quote opened and the text never closed: the CSV reader
/// takes everything after the quote, records included, as the one field.
fn unclosed_quote(line: u64) -> RowError {
    RowError::new(
        RowError::INVALID_ROW,
        format!(
            "a quoted field opened in the record at line {line} is never closed: the rest of the file would be read as that field (close the quote, or double a quote inside it: \"\")"
        ),
        Some(format!("line {line}")),
    )
}

/// The rows of a CSV text with a header line.
fn csv_rows(reader: impl Read + Send) -> impl Iterator<Item = Row> + Send {
    let last = std::sync::Arc::new(std::sync::atomic::AtomicU8::new(0));
    let reader = LastByte {
        inner: reader,
        last: last.clone(),
    };
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(reader);
    let headers = csv.headers().cloned().map_err(|e| e.to_string());
    let mut index = 0u64;
    let mut records = csv.into_records().peekable();
    let mut header_error = headers.clone().err();
    std::iter::from_fn(move || {
        let headers = match &headers {
            Ok(h) => h,
            Err(_) => {
                // An unreadable header is one failed row, then the end.
                let e = header_error.take()?;
                return Some(Row {
                    index: 0,
                    id: Value::from(1u64),
                    input: Err(RowError::new(
                        RowError::INVALID_ROW,
                        format!("cannot read the CSV header: {e}"),
                        Some("line 1".into()),
                    )),
                });
            }
        };
        let record = records.next()?;
        // The line the next record starts on (`None`: this one is the last).
        let next_line = records.peek().map(|next| match next {
            Ok(r) => r.position().map_or(0, csv::Position::line),
            Err(e) => e.position().map_or(0, csv::Position::line),
        });
        // The last record, spanning lines, in a text that does not end in a quote.
        let unclosed = |rec: &csv::StringRecord| {
            spans_lines(rec)
                && next_line.is_none()
                && last.load(std::sync::atomic::Ordering::Relaxed) != b'"'
        };
        let row = match record {
            Ok(rec) if unclosed(&rec) => {
                let line = rec.position().map_or(index + 2, csv::Position::line);
                Row {
                    index,
                    id: Value::from(index + 1),
                    input: Err(unclosed_quote(line)),
                }
            }
            Ok(rec) => {
                let object: Map<String, Value> = headers
                    .iter()
                    .zip(rec.iter())
                    .map(|(k, v)| (k.to_owned(), Value::String(v.to_owned())))
                    .collect();
                Row::new(index, index + 1, Value::Object(object))
            }
            Err(e) => {
                let line = e.position().map_or(index + 2, |p| p.line());
                let message = match e.kind() {
                    csv::ErrorKind::UnequalLengths {
                        expected_len, len, ..
                    } => {
                        let mut m =
                            format!("the record has {len} fields, the header {expected_len}");
                        // A record that reads across lines: most often a quote left open,
                        // which took the records after it into one field.
                        if e.position()
                            .is_some_and(|p| next_line.is_some_and(|n| n > p.line() + 1))
                        {
                            m.push_str(
                                " (it reads across several lines: is a quote in it never closed?)",
                            );
                        }
                        m
                    }
                    csv::ErrorKind::Utf8 { .. } => "the record is not UTF-8".to_owned(),
                    _ => format!("cannot read the record: {e}"),
                };
                Row {
                    index,
                    id: Value::from(index + 1),
                    input: Err(RowError::new(
                        RowError::INVALID_ROW,
                        message,
                        Some(format!("line {line}")),
                    )),
                }
            }
        };
        index += 1;
        Some(row)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rows(text: &str, format: InputFormat) -> Vec<Row> {
        Input::from_bytes(text.as_bytes().to_vec(), format)
            .rows
            .collect()
    }

    #[test]
    fn jsonl_rows_take_their_id_or_line() {
        let r = rows(
            "{\"id\": \"a\", \"text\": \"x\"}\n\n{\"text\": \"y\"}\nnot json\n[1]",
            InputFormat::Jsonl,
        );
        assert_eq!(r.len(), 4);
        assert_eq!((r[0].index, &r[0].id), (0, &json!("a")));
        assert_eq!((r[1].index, &r[1].id), (1, &json!(3)));
        let e = r[2].input.as_ref().unwrap_err();
        assert_eq!(
            (e.kind.as_str(), e.at.as_deref()),
            ("invalid_row", Some("line 4"))
        );
        assert!(
            e.message.starts_with("the line is not JSON")
                && e.message.ends_with(
                    "; each line is one JSON value: write a text row as a JSON string (\"...\") or an object ({\"text\": \"...\"})"
                ),
            "{}",
            e.message
        );
        assert_eq!(r[3].input, Ok(json!([1])));
    }

    /// A line is read as `packc run --input` reads its JSON: a byte order mark before
    /// the first is dropped, a key given twice or an integer past 64 bits fails the row.
    #[test]
    fn jsonl_lines_are_read_strictly() {
        let r = rows(
            "\u{feff}{\"id\": \"a\"}\n{\"id\": \"b\", \"text\": 1, \"text\": 2}\n{\"id\": 12345678901234567890123}\n",
            InputFormat::Jsonl,
        );
        assert_eq!(r[0].input, Ok(json!({"id": "a"})));
        let twice = r[1].input.as_ref().unwrap_err();
        assert!(twice.message.contains("text"), "{}", twice.message);
        let big = r[2].input.as_ref().unwrap_err();
        assert!(
            big.message.contains("does not fit in 64 bits"),
            "{}",
            big.message
        );
    }

    /// `packc.Batch` takes a row's id by the same rule: see `python/tests/test_batch.py`.
    #[test]
    fn an_id_that_is_not_a_string_or_a_number_is_the_line() {
        let r = rows(
            "{\"id\": true}\n{\"id\": null}\n{\"id\": [1]}\n{\"id\": {\"k\": 1}}\n{\"id\": 2.5}\n{\"id\": \"x\"}\n",
            InputFormat::Jsonl,
        );
        let ids: Vec<&Value> = r.iter().map(|r| &r.id).collect();
        assert_eq!(
            ids,
            [
                &json!(1),
                &json!(2),
                &json!(3),
                &json!(4),
                &json!(2.5),
                &json!("x")
            ]
        );
    }

    #[test]
    fn csv_rows_are_objects_of_strings_and_bad_records_fail_alone() {
        let r = rows(
            "id,text\n1,hello\n2,a,b\n3,\"quoted, text\"\n",
            InputFormat::Csv,
        );
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].input, Ok(json!({"id": "1", "text": "hello"})));
        assert_eq!(r[0].id, json!("1"));
        let e = r[1].input.as_ref().unwrap_err();
        assert_eq!(e.at.as_deref(), Some("line 3"));
        assert!(
            e.message.contains("3 fields, the header 2"),
            "{}",
            e.message
        );
        assert_eq!(r[2].input, Ok(json!({"id": "3", "text": "quoted, text"})));
        assert_eq!(r[2].index, 2);
    }

    /// A quote never closed would take the rest of the file into one field: the record
    /// fails, saying so, rather than sending every later row to the model as its text.
    #[test]
    fn a_csv_quote_never_closed_fails_its_record() {
        let mut text = String::from("id,text\n");
        for i in 1..=20 {
            if i == 10 {
                text.push_str("10,\"row 10 text\n");
            } else {
                text.push_str(&format!("{i},row {i} text\n"));
            }
        }
        let r = rows(&text, InputFormat::Csv);
        assert_eq!(r.len(), 10);
        assert!(r[..9].iter().all(|row| row.input.is_ok()));
        let e = r[9].input.as_ref().unwrap_err();
        assert_eq!(e.at.as_deref(), Some("line 11"));
        assert!(e.message.contains("never closed"), "{}", e.message);
        // A quoted field with a line break, closed, at the end of the file reads.
        let r = rows("id,text\n1,\"two\nlines\"\n", InputFormat::Csv);
        assert_eq!(r[0].input, Ok(json!({"id": "1", "text": "two\nlines"})));
    }

    /// A CSV row without an `id` is numbered by its record, from 1 after the header,
    /// whether it reads or not: blank lines and line breaks inside quotes do not count
    /// (a bad record's `where` is its line).
    #[test]
    fn csv_ids_are_record_numbers() {
        let r = rows(
            "text\na\n\n\nb\nc,extra\n\"two\nlines\"\nd\n",
            InputFormat::Csv,
        );
        let ids: Vec<Value> = r.iter().map(|r| r.id.clone()).collect();
        assert_eq!(ids, [json!(1), json!(2), json!(3), json!(4), json!(5)]);
        let e = r[2].input.as_ref().unwrap_err();
        assert_eq!(e.at.as_deref(), Some("line 6"));
        assert_eq!(r[3].input, Ok(json!({"text": "two\nlines"})));
    }

    #[test]
    fn the_digest_is_of_the_bytes() {
        let a = Input::from_bytes(b"{}\n".to_vec(), InputFormat::Jsonl).sha256;
        let b = Input::from_bytes(b"{} \n".to_vec(), InputFormat::Jsonl).sha256;
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
