//! The journal: a SQLite file beside the output (`<output>.journal.sqlite`) that makes a
//! batch restartable, and the writer of the output it guards.
//!
//! Each row has one record: in flight (its latest [`Saved`] state: the run's snapshot,
//! the calls answered so far), done (its output line, held until the rows before it are
//! written, in input order), or written. The `meta` table names what the journal belongs
//! to (the module's fingerprint, the target, the input's SHA-256, the order) and how many
//! bytes of the output are accounted for.
//!
//! Changes are batched: [`Journal::flush`] writes the new output lines to the file, then
//! commits, in one transaction, every state saved since the last flush, the rows done
//! and the output's new length. A process killed at any point (SIGKILL included) leaves
//! either the transaction or nothing; on restart the output is cut back to the length
//! the journal records, so a line written after the last commit is written again, once.
//! The database is in WAL mode with `synchronous = NORMAL`: a commit is not an fsync.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OptionalExtension};

use crate::engine::{Resume, Saved, Sink};
use crate::result::RowResult;
use crate::BatchError;

/// What a journal belongs to: a restart with anything else is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The module's fingerprint ([`Program::fingerprint`](packc_vm::Program::fingerprint)):
    /// the same pack and artifact give the same one.
    pub module: u64,
    /// The target, as given (`workflow`, `composition:x`).
    pub target: String,
    /// The SHA-256 of the input's bytes.
    pub input_sha256: String,
    /// Whether lines are written in input order.
    pub ordered: bool,
    /// The model the calls go to (`--model`): one output holds one model's answers.
    pub model: String,
}

const ROW_IN_FLIGHT: i64 = 0;
const ROW_DONE: i64 = 1;
const ROW_WRITTEN: i64 = 2;

/// How often [`Journal::flush`] commits at most, unless much is waiting.
const COMMIT_EVERY: Duration = Duration::from_millis(50);
/// How many changes make [`Journal::flush`] commit before [`COMMIT_EVERY`].
const COMMIT_AT: usize = 2048;

/// Whether `e` says another connection holds the journal: another batch is running on
/// the same output ([`Journal::lock`]).
fn busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// The journal of a batch and the output file it guards; a [`Sink`].
pub struct Journal {
    db: Connection,
    path: PathBuf,
    out: File,
    out_len: u64,
    ordered: bool,
    /// Ordered output: the next row to write.
    next: u64,
    /// Ordered output: done rows waiting for the rows before them, as lines.
    held: BTreeMap<u64, String>,
    /// Rows finished by an earlier batch (written, or held).
    finished: HashSet<u64>,
    /// Rows an earlier batch left in flight.
    restore: HashMap<u64, Saved>,
    saves: HashMap<u64, Saved>,
    done: Vec<RowResult>,
    last_commit: Instant,
    /// Rows written by this batch.
    written: u64,
    /// The output was shorter than the journal records, and was rewritten from it.
    rebuilt: bool,
    /// The bytes the output held past what the journal records, cut off when it was
    /// opened (lines of a batch that stopped before committing them, or added by hand).
    cut: u64,
}

impl Journal {
    /// Where the journal of `output` lives: `<output>.journal.sqlite`. An output named
    /// by a symbolic link has the journal of the file the link leads to, so that two
    /// batches writing one file, one of them through a link, share one journal (and its
    /// lock) rather than each writing the file as if alone.
    pub fn path_for(output: &Path) -> PathBuf {
        let linked = std::fs::symlink_metadata(output).is_ok_and(|m| m.file_type().is_symlink());
        let real = linked.then(|| std::fs::canonicalize(output).ok()).flatten();
        let output = real.as_deref().unwrap_or(output);
        let mut name = output.as_os_str().to_owned();
        name.push(".journal.sqlite");
        PathBuf::from(name)
    }

    /// Opens (or creates) the journal of `output` and the output itself. With `fresh`,
    /// an existing journal is deleted and the output emptied. Refused: a journal written
    /// for another module, target, input or order; an output that exists, is not empty
    /// and has no journal (it would be overwritten); an output or journal that cannot be
    /// opened for writing.
    pub fn open(output: &Path, identity: &Identity, fresh: bool) -> Result<Journal, BatchError> {
        let path = Journal::path_for(output);
        let io = |what: &str, p: &Path, e: &dyn std::fmt::Display| {
            BatchError::Io(format!("cannot {what} {}: {e}", p.display()))
        };
        let existed = path.exists();
        let out_size = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
        if !existed && out_size > 0 && !fresh {
            return Err(BatchError::Refused(format!(
                "{} exists and has no journal beside it ({}); pass --fresh to overwrite it, or give another --output",
                output.display(),
                path.display()
            )));
        }
        // The journal is held for the whole batch before anything is changed: a second
        // batch on the same output (`--fresh` included) is refused, not interleaved.
        let db = match Journal::lock(&path) {
            Ok(db) => db,
            Err(e) if busy(&e) => {
                return Err(BatchError::Refused(format!(
                    "another packc batch is writing {} (its journal {} is locked); wait for it to end, or give another --output",
                    output.display(),
                    path.display()
                )))
            }
            // Not a journal at all: `--fresh` replaces it.
            Err(_) if fresh => {
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = path.as_os_str().to_owned();
                    p.push(suffix);
                    match std::fs::remove_file(&p) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                            return Err(io("remove", Path::new(&p), &e))
                        }
                        _ => {}
                    }
                }
                Journal::lock(&path).map_err(|e| io("open the journal", &path, &e))?
            }
            Err(e) => return Err(io("open the journal", &path, &e)),
        };
        let sql = |e: rusqlite::Error| BatchError::Journal(format!("{}: {e}", path.display()));
        if fresh {
            db.execute_batch("DELETE FROM rows; DELETE FROM meta;")
                .map_err(sql)?;
        }
        let out = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(output)
            .map_err(|e| io("open the output", output, &e))?;
        let wanted = [
            ("module", format!("{:016x}", identity.module)),
            ("target", identity.target.clone()),
            ("input_sha256", identity.input_sha256.clone()),
            (
                "order",
                if identity.ordered { "input" } else { "finish" }.to_owned(),
            ),
            ("model", identity.model.clone()),
        ];
        let meta = |key: &str| -> Result<Option<String>, BatchError> {
            db.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
                .optional()
                .map_err(sql)
        };
        let out_len = match meta("out_len")? {
            None => {
                // A new journal: it belongs to this batch from now on.
                for (k, v) in &wanted {
                    db.execute("INSERT OR REPLACE INTO meta VALUES (?1, ?2)", params![k, v])
                        .map_err(sql)?;
                }
                db.execute("INSERT OR REPLACE INTO meta VALUES ('out_len', '0')", [])
                    .map_err(sql)?;
                0
            }
            Some(len) => {
                for (k, v) in &wanted {
                    let Some(had) = meta(k)? else {
                        // A journal written before this key existed: it takes it now.
                        db.execute("INSERT INTO meta VALUES (?1, ?2)", params![k, v])
                            .map_err(sql)?;
                        continue;
                    };
                    if &had != v {
                        let what = match *k {
                            "module" => "another pack or artifact (its module differs)".to_owned(),
                            "target" => format!("target `{had}`, not `{v}`"),
                            "model" => format!("model `{had}`, not `{v}`"),
                            "input_sha256" => "another input (its bytes differ; rows added to it are run with the rest after --fresh, or go in an input and --output of their own)".to_owned(),
                            _ => format!(
                                "output in {had} order (pass {} --unordered as before)",
                                if had == "finish" { "" } else { "no" }
                            ),
                        };
                        return Err(BatchError::Refused(format!(
                            "{} was written for {what}; pass --fresh to start over (the output is rewritten), or give another --output",
                            path.display()
                        )));
                    }
                }
                len.parse::<u64>().map_err(|e| {
                    BatchError::Journal(format!("{}: bad out_len: {e}", path.display()))
                })?
            }
        };
        // An output cut short or deleted by hand is rewritten from the journal, which
        // holds every finished line (below); else it is cut back to what was committed.
        let short = out_size < out_len;
        if !short {
            out.set_len(out_len)
                .map_err(|e| io("cut back the output", output, &e))?;
        }
        let mut out = out;
        out.seek(SeekFrom::End(0))
            .map_err(|e| io("seek in the output", output, &e))?;

        let mut journal = Journal {
            db,
            path: path.clone(),
            out,
            out_len,
            ordered: identity.ordered,
            next: 0,
            held: BTreeMap::new(),
            finished: HashSet::new(),
            restore: HashMap::new(),
            saves: HashMap::new(),
            done: Vec::new(),
            last_commit: Instant::now(),
            written: 0,
            rebuilt: false,
            cut: if fresh {
                0
            } else {
                out_size.saturating_sub(out_len)
            },
        };
        journal.load().map_err(sql)?;
        if short {
            let lines = journal.finished_lines()?;
            journal.rewrite(lines, &[])?;
            journal.rebuilt = true;
        }
        Ok(journal)
    }

    /// Opens the journal at `path` (creating it) and takes SQLite's write lock on it for
    /// as long as the connection lives (`locking_mode = EXCLUSIVE`, in WAL mode): a
    /// second process opening it fails at once, [`busy`]. The tables are made if
    /// missing; `auto_vacuum = INCREMENTAL` (a new journal only) lets [`Sink::finish`]
    /// hand back the pages of the snapshots it dropped.
    fn lock(path: &Path) -> rusqlite::Result<Connection> {
        let db = Connection::open(path)?;
        // Refused at once, not after rusqlite's default wait of 5 s.
        db.busy_timeout(Duration::ZERO)?;
        db.execute_batch(
            "PRAGMA locking_mode = EXCLUSIVE;
             PRAGMA auto_vacuum = INCREMENTAL;
             PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             BEGIN IMMEDIATE;
             CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS rows (
                 idx INTEGER PRIMARY KEY,
                 state INTEGER NOT NULL,
                 line TEXT,
                 snapshot BLOB,
                 calls INTEGER NOT NULL,
                 tokens INTEGER NOT NULL,
                 wall_ms INTEGER NOT NULL,
                 answered TEXT NOT NULL
             );
             COMMIT;",
        )?;
        Ok(db)
    }

    fn load(&mut self) -> rusqlite::Result<()> {
        let mut stmt = self.db.prepare(
            "SELECT idx, state, line, snapshot, calls, tokens, wall_ms, answered FROM rows ORDER BY idx",
        )?;
        let mut rows = stmt.query([])?;
        let mut written_prefix = true;
        while let Some(r) = rows.next()? {
            let idx: u64 = r.get::<_, i64>(0)? as u64;
            let state: i64 = r.get(1)?;
            match state {
                ROW_WRITTEN => {
                    self.finished.insert(idx);
                    if written_prefix && idx == self.next {
                        self.next += 1;
                    } else {
                        written_prefix = false;
                    }
                }
                ROW_DONE => {
                    written_prefix = false;
                    self.finished.insert(idx);
                    let line: String = r.get(2)?;
                    self.held.insert(idx, line);
                }
                _ => {
                    written_prefix = false;
                    let answered: String = r.get(7)?;
                    self.restore.insert(
                        idx,
                        Saved {
                            snapshot: r.get(3)?,
                            calls: r.get::<_, i64>(4)? as u64,
                            tokens: r.get::<_, i64>(5)? as u64,
                            wall_ms: r.get::<_, i64>(6)? as u64,
                            answered: serde_json::from_str(&answered).unwrap_or_default(),
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rows an earlier batch finished (written or waiting to be).
    pub fn finished_earlier(&self) -> usize {
        self.finished.len()
    }

    /// Rows an earlier batch finished that failed (their lines hold an `error`): what
    /// `--retry-failed` would run again.
    pub fn failed_earlier(&self) -> Result<u64, BatchError> {
        if self.finished.is_empty() {
            return Ok(0);
        }
        let path = self.path.display().to_string();
        let sql = |e: rusqlite::Error| BatchError::Journal(format!("{path}: {e}"));
        // Only lines that may hold an error are read back and judged.
        let mut stmt = self
            .db
            .prepare("SELECT line FROM rows WHERE state IN (?1, ?2) AND line LIKE '%\"error\":%'")
            .map_err(sql)?;
        let mut rows = stmt.query(params![ROW_DONE, ROW_WRITTEN]).map_err(sql)?;
        let mut failed = 0;
        while let Some(r) = rows.next().map_err(sql)? {
            if crate::result::is_failure_line(&r.get::<_, String>(0).map_err(sql)?) {
                failed += 1;
            }
        }
        Ok(failed)
    }

    /// Rows an earlier batch left in flight.
    pub fn in_flight_earlier(&self) -> usize {
        self.restore.len()
    }

    /// Rows done but not written because a row before them is not done (ordered output).
    pub fn held(&self) -> usize {
        self.held.len()
    }

    fn commit(&mut self) -> Result<(), BatchError> {
        let path = self.path.display().to_string();
        let sql = |e: rusqlite::Error| BatchError::Journal(format!("{path}: {e}"));
        let tx = self.db.transaction().map_err(sql)?;
        let mut lines = String::new();
        {
            let mut save = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO rows VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .map_err(sql)?;
            let mut mark = tx
                .prepare_cached("UPDATE rows SET state = ?2, snapshot = NULL WHERE idx = ?1")
                .map_err(sql)?;
            for (idx, s) in self.saves.drain() {
                let answered = serde_json::to_string(&s.answered).unwrap_or_default();
                save.execute(params![
                    idx as i64,
                    ROW_IN_FLIGHT,
                    Option::<String>::None,
                    s.snapshot,
                    s.calls as i64,
                    s.tokens as i64,
                    s.wall_ms as i64,
                    answered
                ])
                .map_err(sql)?;
            }
            for r in self.done.drain(..) {
                let line = r.line();
                let write_now = !self.ordered || r.index == self.next;
                save.execute(params![
                    r.index as i64,
                    if write_now { ROW_WRITTEN } else { ROW_DONE },
                    line,
                    Option::<Vec<u8>>::None,
                    r.calls as i64,
                    r.tokens as i64,
                    r.wall_ms as i64,
                    "[]"
                ])
                .map_err(sql)?;
                if write_now {
                    lines.push_str(&line);
                    lines.push('\n');
                    self.written += 1;
                    if self.ordered {
                        self.next += 1;
                    }
                } else {
                    self.held.insert(r.index, line);
                }
            }
            // Ordered: the rows held behind the next one may go now. Unordered output
            // holds rows only after `retry_failed`: they all go.
            while let Some(first) = self.held.first_entry() {
                if self.ordered && *first.key() != self.next {
                    break;
                }
                let (idx, line) = first.remove_entry();
                mark.execute(params![idx as i64, ROW_WRITTEN])
                    .map_err(sql)?;
                lines.push_str(&line);
                lines.push('\n');
                self.written += 1;
                if self.ordered {
                    self.next += 1;
                }
            }
        }
        if !lines.is_empty() {
            // The lines reach the file before the commit that counts them: killed in
            // between, the restart cuts them off and writes them again.
            self.out
                .write_all(lines.as_bytes())
                .map_err(|e| BatchError::Io(format!("cannot write the output: {e}")))?;
            self.out_len += lines.len() as u64;
            tx.execute(
                "UPDATE meta SET value = ?1 WHERE key = 'out_len'",
                [self.out_len.to_string()],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        self.last_commit = Instant::now();
        Ok(())
    }

    /// Makes the failed rows of earlier batches run again: their results (every line with
    /// an `error`) are dropped from the journal, and the output is rewritten from the
    /// journal, the other finished rows in input order, each retried row's new line in
    /// its place (ordered output) or after them (unordered). Returns how many rows will
    /// run again. The journal commits the change before the output is cut: a process
    /// killed at any point leaves the old output and journal, or the new journal, whose
    /// next open cuts the output and writes the kept lines again.
    pub fn retry_failed(&mut self) -> Result<u64, BatchError> {
        self.commit()?;
        let lines = self.finished_lines()?;
        let failed: Vec<u64> = lines
            .iter()
            .filter(|(_, line)| crate::result::is_failure_line(line))
            .map(|(idx, _)| *idx)
            .collect();
        if !failed.is_empty() {
            self.rewrite(lines, &failed)?;
        }
        Ok(failed.len() as u64)
    }

    /// Every finished row's line (done or written), by row.
    fn finished_lines(&self) -> Result<BTreeMap<u64, String>, BatchError> {
        let path = self.path.display().to_string();
        let sql = |e: rusqlite::Error| BatchError::Journal(format!("{path}: {e}"));
        let mut stmt = self
            .db
            .prepare("SELECT idx, line FROM rows WHERE state IN (?1, ?2) ORDER BY idx")
            .map_err(sql)?;
        let mut rows = stmt.query(params![ROW_DONE, ROW_WRITTEN]).map_err(sql)?;
        let mut lines = BTreeMap::new();
        while let Some(r) = rows.next().map_err(sql)? {
            let idx = r.get::<_, i64>(0).map_err(sql)? as u64;
            lines.insert(idx, r.get::<_, String>(1).map_err(sql)?);
        }
        Ok(lines)
    }

    /// Rewrites the output from the journal's finished `lines` ([`Journal::finished_lines`]),
    /// without the results of the rows `dropped`, which are forgotten (they run again):
    /// every other finished row's line, in input order, the held ones included. The
    /// journal commits first (those rows dropped, every finished row held, the output's
    /// length 0); then the output is cut, and the lines before the first row not finished
    /// (ordered), or all of them (unordered), are written and committed at once.
    fn rewrite(&mut self, lines: BTreeMap<u64, String>, dropped: &[u64]) -> Result<(), BatchError> {
        let path = self.path.display().to_string();
        let sql = |e: rusqlite::Error| BatchError::Journal(format!("{path}: {e}"));
        let mut kept = lines;
        for idx in dropped {
            kept.remove(idx);
        }
        let tx = self.db.transaction().map_err(sql)?;
        {
            let mut drop_row = tx.prepare("DELETE FROM rows WHERE idx = ?1").map_err(sql)?;
            for idx in dropped {
                drop_row.execute([*idx as i64]).map_err(sql)?;
            }
        }
        tx.execute(
            "UPDATE rows SET state = ?1 WHERE state = ?2",
            params![ROW_DONE, ROW_WRITTEN],
        )
        .map_err(sql)?;
        tx.execute("UPDATE meta SET value = '0' WHERE key = 'out_len'", [])
            .map_err(sql)?;
        tx.commit().map_err(sql)?;
        let output = |e: std::io::Error| BatchError::Io(format!("cannot rewrite the output: {e}"));
        self.out.set_len(0).map_err(output)?;
        self.out.seek(SeekFrom::Start(0)).map_err(output)?;
        self.out_len = 0;
        self.next = 0;
        for idx in dropped {
            self.finished.remove(idx);
        }
        self.held = kept;
        self.commit()
    }

    /// Whether [`Journal::open`] found the output shorter than the journal records (cut
    /// or deleted by hand) and rewrote it from the journal.
    pub fn rebuilt(&self) -> bool {
        self.rebuilt
    }

    /// How many bytes [`Journal::open`] cut off the end of the output, past what the
    /// journal records: lines a stopped batch wrote and did not commit (asked again now),
    /// or text added by hand.
    pub fn cut(&self) -> u64 {
        self.cut
    }

    /// Rows written to the output by this batch.
    pub fn written(&self) -> u64 {
        self.written
    }
}

impl Sink for Journal {
    fn resume(&mut self, index: u64) -> Resume {
        if self.finished.contains(&index) {
            return Resume::Skip;
        }
        match self.restore.remove(&index) {
            Some(saved) => Resume::Restore(saved),
            None => Resume::Fresh,
        }
    }

    fn saved(&mut self, index: u64, saved: Saved) -> Result<(), BatchError> {
        self.saves.insert(index, saved);
        Ok(())
    }

    fn done(&mut self, result: RowResult) -> Result<(), BatchError> {
        self.saves.remove(&result.index);
        self.done.push(result);
        if self.done.len() + self.saves.len() >= COMMIT_AT {
            self.commit()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), BatchError> {
        let waiting = self.done.len() + self.saves.len();
        if waiting > 0 && self.last_commit.elapsed() >= COMMIT_EVERY || waiting >= COMMIT_AT {
            self.commit()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), BatchError> {
        self.commit()?;
        // The pages of the snapshots dropped as rows finished go back to the file system.
        let path = self.path.display().to_string();
        self.db
            .execute_batch("PRAGMA incremental_vacuum;")
            .map_err(|e| BatchError::Journal(format!("{path}: {e}")))?;
        self.out
            .flush()
            .map_err(|e| BatchError::Io(format!("cannot write the output: {e}")))
    }
}
