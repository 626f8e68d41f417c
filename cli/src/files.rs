//! Writing the files `packc` makes (`build`'s artifact, `run --record`'s case) safely.
//!
//! - A file is written to a temporary file beside it, created exclusively (`O_EXCL`: a
//!   name that exists, a planted symbolic link included, is never opened, another name
//!   is tried), then renamed over the target, so a reader never sees half a file and a
//!   link at the target is replaced, not followed.
//! - A file that would replace one the command reads (the pack, a host script, a case)
//!   is refused, whatever path names it (checked on the files themselves, not the
//!   names), and so is a device, pipe or socket, which a rename would replace.
//! - The folder is checked before any work is done, so a run is not lost for want of it.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// How many temporary names are tried before giving up.
const TEMP_TRIES: u32 = 16;

/// The folder a file at `path` goes into (`.` for a bare name).
pub(crate) use packc_compiler::paths::folder_of;

/// Make the folder an output file at `path` goes into, and the folders above it, when
/// it does not exist yet (`packc build -o build/x.ppk` in a fresh checkout). `what` names
/// the option in the error.
pub fn make_folder(path: &Path, what: &str) -> Result<()> {
    let dir = folder_of(path);
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::create_dir_all(dir).with_context(|| {
            format!(
                "{what} {}: the folder {} cannot be made",
                path.display(),
                dir.display()
            )
        })?;
    }
    Ok(())
}

/// Check that `path` can be written: its folder exists, it is not a folder nor a device,
/// pipe or socket (the file is replaced, not written through), and it is none of the
/// files the command reads (`inputs`: the pack, a host script, cases). `what` names the
/// option in the error.
pub fn check_target(path: &Path, inputs: &[&Path], what: &str) -> Result<()> {
    let dir = folder_of(path);
    let meta = std::fs::metadata(dir).with_context(|| {
        format!(
            "{what} {}: the folder {} cannot be used",
            path.display(),
            dir.display()
        )
    })?;
    if !meta.is_dir() {
        bail!(
            "{what} {}: {} is not a folder",
            path.display(),
            dir.display()
        );
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => bail!("{what} {}: is a folder", path.display()),
        Ok(m) if !m.is_file() => bail!(
            "{what} {}: is not a regular file (a device, pipe or socket); packc writes a \
             file by replacing it, so give the path of a file",
            path.display()
        ),
        _ => {}
    }
    if let Some(input) = inputs.iter().find(|input| same_file(path, input)) {
        bail!(
            "{what} {} is {} itself, which this command reads; writing it would destroy it",
            path.display(),
            input.display()
        );
    }
    Ok(())
}

/// Check that an existing file at `path` is one this kind of output may replace: one
/// that starts with `start` (what packc writes there: a save file's header, a JUnit
/// report's XML declaration). Any other file is refused rather than destroyed, whatever
/// it is (a pack, a host script, notes).
pub fn check_replaceable(path: &Path, start: &[u8], what: &str, kind: &str) -> Result<()> {
    use std::io::Read;
    let Ok(mut file) = File::open(path) else {
        return Ok(());
    };
    let mut head = vec![0; start.len()];
    if file.read_exact(&mut head).is_ok() && head == start {
        return Ok(());
    }
    bail!(
        "{what} {} exists and is not {kind}; packc replaces only a file it wrote there, so \
         remove it or give another path",
        path.display()
    )
}

/// Whether `a` and `b` are the same existing file (following links, as a write would).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        ma.dev() == mb.dev() && ma.ino() == mb.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (ma, mb);
        matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
    }
}

/// Write `bytes` to `path` through an exclusively created temporary file beside it, then
/// rename it into place. With `overwrite` false, an existing `path` is refused (before
/// anything is written, and again just before the rename).
pub fn write_atomically(path: &Path, bytes: &[u8], overwrite: bool) -> Result<()> {
    let exists = || std::fs::symlink_metadata(path).is_ok();
    if !overwrite && exists() {
        bail!("{} exists; pass --force to overwrite it", path.display());
    }
    let (tmp, mut file) = create_temp(path)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()));
    drop(file);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    if !overwrite && exists() {
        let _ = std::fs::remove_file(&tmp);
        bail!("{} exists; pass --force to overwrite it", path.display());
    }
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

/// A new file `.<name>.tmp<pid>-<n>` beside `path`, created exclusively.
fn create_temp(path: &Path) -> Result<(PathBuf, File)> {
    let name = path.file_name().map(OsString::from).unwrap_or_default();
    let mut last = None;
    for n in 0..TEMP_TRIES {
        let mut tmp_name = OsString::from(".");
        tmp_name.push(&name);
        tmp_name.push(format!(".tmp{}-{n}", std::process::id()));
        let tmp = path.with_file_name(tmp_name);
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot create {}", tmp.display()));
            }
        }
    }
    Err(last.expect("at least one try"))
        .with_context(|| format!("cannot create a temporary file beside {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh scratch folder, removed when the returned guard is dropped.
    fn dir(tag: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("packc-files-{tag}-"))
            .tempdir()
            .unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_link_at_the_temporary_name_is_not_followed() {
        let tmp = dir("planted");
        let d = tmp.path();
        let victim = d.join("victim.txt");
        std::fs::write(&victim, "keep").unwrap();
        let out = d.join("a.ppk");
        // Every name the writer could pick first is a link to the victim.
        for n in 0..4 {
            let tmp = d.join(format!(".a.ppk.tmp{}-{n}", std::process::id()));
            std::os::unix::fs::symlink(&victim, tmp).unwrap();
        }
        write_atomically(&out, b"new", true).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
        // A link at the target itself is replaced, not written through.
        let link = d.join("b.ppk");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        write_atomically(&link, b"other", true).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(!std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn an_existing_file_is_kept_unless_overwriting() {
        let tmp = dir("exists");
        let d = tmp.path();
        let out = d.join("x.case.yaml");
        std::fs::write(&out, "old").unwrap();
        let err = write_atomically(&out, b"new", false).unwrap_err();
        assert!(err.to_string().contains("--force"), "{err}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
        write_atomically(&out, b"new", true).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
        let left: Vec<_> = std::fs::read_dir(d).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn the_pack_itself_and_missing_folders_are_refused() {
        let tmp = dir("target");
        let d = tmp.path();
        let pack = d.join("p.pack.yaml");
        std::fs::write(&pack, "id: p").unwrap();
        let host = d.join("h.host.yaml");
        std::fs::write(&host, "answers: {}").unwrap();
        let inputs = [pack.as_path(), host.as_path()];
        let err = check_target(&d.join("./p.pack.yaml"), &inputs, "-o").unwrap_err();
        assert!(err.to_string().contains("itself"), "{err}");
        let err = check_target(&d.join("./h.host.yaml"), &inputs, "--save").unwrap_err();
        assert!(err.to_string().contains("h.host.yaml itself"), "{err}");
        let err = check_target(&d.join("nodir/x.case.yaml"), &inputs, "--record").unwrap_err();
        assert!(err.to_string().contains("nodir"), "{err}");
        assert!(check_target(&d.join("x.ppk"), &inputs, "-o").is_ok());
        assert!(check_target(d, &inputs, "-o").is_err());
        // A device is not replaced by a file.
        #[cfg(unix)]
        {
            let err = check_target(Path::new("/dev/null"), &inputs, "-o").unwrap_err();
            assert!(err.to_string().contains("not a regular file"), "{err}");
        }
    }
}
