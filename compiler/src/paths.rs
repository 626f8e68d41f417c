//! Files a pack names stay inside the pack's folder.
//!
//! A pack may name files (a step's `output_schema`); the compiler reads them and embeds
//! what it reads in the artifact, and the live host sends an embedded schema to the model
//! server. A pack from a third party must therefore not be able to name a file outside
//! its own folder: `/etc/passwd`, `../secret/.env`, or a symbolic link in the folder that
//! points out of it. [`open`] is the one door every such read goes through:
//!
//! - the name is resolved one component at a time from the pack's folder (its real path),
//!   following `..` and symbolic links as the operating system would. As soon as the
//!   path would leave the folder (and every folder the embedder allowed, see
//!   [`Folders::allow`]), the name is refused as [`OpenError::Outside`] *before* anything
//!   outside is looked at, so whether an outside file exists, or is a schema, is never
//!   revealed: an outside name gets the same answer either way;
//! - an absolute name is refused unless it lies in an allowed folder (a pack's own files
//!   are named relative to the pack file);
//! - the file is then opened, and the opened file is checked again: its real path must be
//!   inside an allowed folder and be the very file that was opened (same device and
//!   inode), so swapping a component for a symbolic link while the compiler runs does not
//!   get past the check.
//!
//! Errors that concern a file inside the folder (not found, not a regular file) are
//! [`OpenError::Unusable`]; the check reports them as warnings (`unresolved_schema`), an
//! outside name as the error `unsafe_path`.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::File;
use std::path::{Component, Path, PathBuf};

/// The most symbolic links followed while resolving one name (as Linux's `ELOOP`).
pub const MAX_SYMLINKS: usize = 40;

/// Where the files a pack names may be read from: the pack's folder, plus the folders
/// an embedder allows deliberately (`packc --allow-path DIR`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Folders {
    /// The pack's folder; relative names are resolved from it. An empty path is the
    /// current folder.
    pub base: PathBuf,
    /// Further folders files may be read from (and absolute names may point into).
    pub allow: Vec<PathBuf>,
}

/// Why a file a pack names was not opened.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The name leads outside the pack's folder and every allowed folder; what follows
    /// says how (an absolute path, `..`, a symbolic link). Nothing outside was read.
    #[error("{0}")]
    Outside(String),
    /// A file inside the folder that cannot be used: not found, not a regular file, a
    /// loop of symbolic links, an I/O error.
    #[error("{0}")]
    Unusable(String),
}

/// Resolve `name` as [`Folders`] allows and open it for reading.
///
/// Returns the open file and its real path. See the module documentation for what is
/// refused.
pub fn open(folders: &Folders, name: &str) -> Result<(File, PathBuf), OpenError> {
    let base_dir = if folders.base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folders.base.as_path()
    };
    let base = std::fs::canonicalize(base_dir).map_err(|e| {
        OpenError::Unusable(format!(
            "the pack's folder {} cannot be resolved: {e}",
            base_dir.display()
        ))
    })?;
    let allowed: Vec<PathBuf> = folders
        .allow
        .iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .collect();
    let absolute = Path::new(name).has_root();
    // An absolute name may only point into a folder allowed deliberately.
    let roots: Vec<&Path> = if absolute {
        allowed.iter().map(PathBuf::as_path).collect()
    } else {
        std::iter::once(base.as_path())
            .chain(allowed.iter().map(PathBuf::as_path))
            .collect()
    };
    let outside = |how: &str| {
        if absolute {
            OpenError::Outside(
                "it is an absolute path, and a pack names its files relative to its own folder"
                    .into(),
            )
        } else {
            OpenError::Outside(how.into())
        }
    };
    let (path, is_file) = resolve(&base, name, &roots, &outside)?;
    if !is_file {
        return Err(OpenError::Unusable("not a file".into()));
    }
    let file = File::open(&path).map_err(|e| OpenError::Unusable(e.to_string()))?;
    // Check the file that was opened, not the name: a component swapped for a symbolic
    // link since `resolve` looked at it shows up here.
    let real = std::fs::canonicalize(&path).map_err(|_| outside("it changed while being read"))?;
    if !roots.iter().any(|r| real.starts_with(r)) {
        return Err(outside("a symbolic link leads out of it"));
    }
    let opened = file
        .metadata()
        .map_err(|e| OpenError::Unusable(e.to_string()))?;
    let named = std::fs::metadata(&real).map_err(|e| OpenError::Unusable(e.to_string()))?;
    if !same_file(&opened, &named) {
        return Err(outside("it changed while being read"));
    }
    if !opened.is_file() {
        return Err(OpenError::Unusable("not a file".into()));
    }
    Ok((file, real))
}

/// The bytes of the file a command was given (a pack, an artifact, a case, a save
/// file), read only when it is a regular file of at most `limit` bytes.
///
/// A device (`/dev/zero`), a pipe (which would block the read until a writer comes) or
/// a socket is refused before it is opened, and a file that grows past `limit` while it
/// is read is refused without reading more than `limit + 1` bytes: a path taken from a
/// file someone else wrote (a save file's `pack:`, a case's `pack_file`) cannot make the
/// reader hang or fill memory.
///
/// A file given as a symbolic link is read only when the link leads into its own folder
/// or the current folder: a link planted in a repository (`evil.pack.yaml` pointing at
/// `~/.netrc`) would otherwise show that file's first line in the diagnostics of a
/// `packc check packs/*.pack.yaml`. Name the file itself to read it.
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    if let Some(why) = link_out(path) {
        return Err(Error::new(ErrorKind::PermissionDenied, why));
    }
    let meta = std::fs::metadata(path)?;
    let not_regular = || {
        Error::new(
            ErrorKind::InvalidInput,
            "not a regular file (a device, pipe or socket)",
        )
    };
    if meta.is_dir() {
        return Err(Error::new(ErrorKind::InvalidInput, "it is a folder"));
    }
    if !meta.is_file() {
        return Err(not_regular());
    }
    let file = File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(not_regular());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(limit)).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(bytes)
}

/// The extensions a pack file's name ends in: `*.json` is read strictly as JSON, the
/// others as YAML.
pub const PACK_EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Whether `path` is named as a pack file: its extension is one of [`PACK_EXTENSIONS`].
pub fn is_pack_name(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| PACK_EXTENSIONS.contains(&e))
}

/// The folder `path` is in, `.` for a bare name.
pub fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// All of an open file, refused as larger than `limit` bytes once it has given `limit +
/// 1` (not trusting the size it had when it was looked at).
pub fn read_bounded(file: File, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(bytes)
}

/// Why `path` is not read: it is a symbolic link to a file outside the link's own folder
/// and the current folder. `None` for anything else (a missing file is left to the read).
fn link_out(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_symlink() {
        return None;
    }
    let real = std::fs::canonicalize(path).ok()?;
    let folder = std::fs::canonicalize(folder_of(path)).ok();
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|d| std::fs::canonicalize(d).ok());
    let inside = [folder, cwd]
        .into_iter()
        .flatten()
        .any(|d| real.starts_with(d));
    (!inside).then(|| {
        "a symbolic link to a file outside its own folder and the current folder, which is not followed: name the file itself".to_owned()
    })
}

/// Walk `name` from `base` component by component, following `..` and symbolic links,
/// never looking at a path that is neither inside a root nor an ancestor of one. Returns
/// the resolved path and whether it is a regular file.
fn resolve(
    base: &Path,
    name: &str,
    roots: &[&Path],
    outside: &dyn Fn(&str) -> OpenError,
) -> Result<(PathBuf, bool), OpenError> {
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    let on_the_way = |p: &Path| inside(p) || roots.iter().any(|r| r.starts_with(p));
    let mut queue: VecDeque<OsString> = components(Path::new(name));
    let mut cur = base.to_path_buf();
    let mut is_file = false;
    let mut through_link = false;
    let mut links = 0usize;
    while let Some(c) = queue.pop_front() {
        let comp = Path::new(&c);
        match comp.components().next() {
            None | Some(Component::CurDir) => continue,
            Some(Component::Prefix(_)) => {
                cur = comp.to_path_buf();
                continue;
            }
            Some(Component::RootDir) => {
                cur.push(comp);
                continue;
            }
            Some(Component::ParentDir) => {
                cur.pop();
                is_file = false;
            }
            Some(Component::Normal(part)) => {
                let next = cur.join(part);
                if !on_the_way(&next) {
                    return Err(outside(if through_link {
                        "a symbolic link leads out of it"
                    } else {
                        "`..` leads out of it"
                    }));
                }
                let meta = std::fs::symlink_metadata(&next)
                    .map_err(|e| OpenError::Unusable(not_found(&e)))?;
                if meta.file_type().is_symlink() {
                    links += 1;
                    if links > MAX_SYMLINKS {
                        return Err(OpenError::Unusable("too many symbolic links".into()));
                    }
                    let target = std::fs::read_link(&next)
                        .map_err(|e| OpenError::Unusable(e.to_string()))?;
                    through_link = true;
                    let mut front = components(&target);
                    front.extend(queue);
                    queue = front;
                    is_file = false;
                } else {
                    is_file = meta.is_file();
                    cur = next;
                }
            }
        }
        if !on_the_way(&cur) {
            return Err(outside(if through_link {
                "a symbolic link leads out of it"
            } else {
                "`..` leads out of it"
            }));
        }
    }
    if !inside(&cur) {
        return Err(outside(if through_link {
            "a symbolic link leads out of it"
        } else {
            "`..` leads out of it"
        }));
    }
    Ok((cur, is_file))
}

fn components(path: &Path) -> VecDeque<OsString> {
    path.components()
        .map(|c| c.as_os_str().to_os_string())
        .collect()
}

fn not_found(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "not found".into(),
        _ => e.to_string(),
    }
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    a.len() == b.len() && a.file_type() == b.file_type()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch folder with a pack folder and a secret beside it, removed when the
    /// returned guard is dropped.
    fn folder(tag: &str) -> tempfile::TempDir {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("packc-paths-{tag}-"))
            .tempdir()
            .unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("pack/sub")).unwrap();
        std::fs::create_dir_all(dir.join("secret")).unwrap();
        std::fs::write(dir.join("pack/in.json"), "{}").unwrap();
        std::fs::write(dir.join("pack/sub/deep.json"), "{}").unwrap();
        std::fs::write(dir.join("secret/s.json"), "{}").unwrap();
        tmp
    }

    fn at(dir: &Path) -> Folders {
        Folders {
            base: dir.join("pack"),
            allow: Vec::new(),
        }
    }

    fn outside(r: Result<(File, PathBuf), OpenError>) -> bool {
        matches!(r, Err(OpenError::Outside(_)))
    }

    /// Why `name`, a name inside the folders, cannot be read.
    #[track_caller]
    fn unusable(f: &Folders, name: &str) -> String {
        match open(f, name) {
            Err(OpenError::Unusable(why)) => why,
            Err(e) => panic!("{name}: {e:?}"),
            Ok(_) => panic!("{name} opened"),
        }
    }

    #[test]
    fn read_regular_refuses_devices_pipes_folders_and_large_files() {
        let tmp = folder("regular");
        let dir = tmp.path();
        let file = dir.join("pack/p.yaml");
        std::fs::write(&file, "id: x\n").unwrap();
        assert_eq!(read_regular(&file, 6).unwrap(), b"id: x\n");
        let err = read_regular(&file, 5).unwrap_err();
        assert_eq!(err.to_string(), "larger than 5 bytes");
        assert_eq!(
            read_regular(&dir.join("pack"), 100)
                .unwrap_err()
                .to_string(),
            "it is a folder"
        );
        #[cfg(unix)]
        {
            let refused = "not a regular file (a device, pipe or socket)";
            assert_eq!(
                read_regular(Path::new("/dev/zero"), 100)
                    .unwrap_err()
                    .to_string(),
                refused
            );
            let fifo = dir.join("fifo");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            if made.is_ok_and(|s| s.success()) {
                // Refused without opening it, which would block for a writer.
                assert_eq!(read_regular(&fifo, 100).unwrap_err().to_string(), refused);
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn read_regular_follows_a_link_only_into_its_own_folder() {
        let tmp = folder("links");
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("secret")).unwrap();
        std::fs::write(dir.join("secret/netrc"), "password s3cret\n").unwrap();
        std::fs::write(dir.join("pack/real.yaml"), "id: x\n").unwrap();
        let out = dir.join("pack/evil.pack.yaml");
        std::os::unix::fs::symlink("../secret/netrc", &out).unwrap();
        let near = dir.join("pack/near.pack.yaml");
        std::os::unix::fs::symlink("real.yaml", &near).unwrap();
        let e = read_regular(&out, 100).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(read_regular(&near, 100).unwrap(), b"id: x\n");
        // The file itself, named, is read.
        assert!(read_regular(&dir.join("secret/netrc"), 100).is_ok());
    }

    #[test]
    fn names_inside_the_folder_open() {
        let tmp = folder("inside");
        let dir = tmp.path();
        let f = at(dir);
        for name in [
            "in.json",
            "./in.json",
            "sub/deep.json",
            "sub/../in.json",
            "../pack/in.json",
        ] {
            assert!(open(&f, name).is_ok(), "{name}");
        }
        assert_eq!(unusable(&f, "missing.json"), "not found");
        assert_eq!(unusable(&f, "sub"), "not a file");
    }

    #[test]
    fn names_outside_are_refused_whether_or_not_they_exist() {
        let tmp = folder("outside");
        let dir = tmp.path();
        let f = at(dir);
        for name in [
            "../secret/s.json",
            "../secret/missing.json",
            "../../../../../../etc/passwd",
            "sub/../../secret/s.json",
            "..",
        ] {
            assert!(outside(open(&f, name)), "{name}");
        }
        let abs = dir.join("secret/s.json");
        assert!(outside(open(&f, abs.to_str().unwrap())));
        assert!(outside(open(&f, "/nonexistent/x.json")));
        // An absolute path into the pack's own folder is refused too: not portable.
        assert!(outside(open(
            &f,
            dir.join("pack/in.json").to_str().unwrap()
        )));
    }

    #[cfg(unix)]
    #[test]
    fn symbolic_links_are_followed_and_checked() {
        let tmp = folder("links");
        let dir = tmp.path();
        let f = at(dir);
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, dir.join("pack").join(name)).unwrap()
        };
        link(&dir.join("secret/s.json"), "out.json");
        link(&dir.join("secret/missing.json"), "dangling.json");
        link(&dir.join("secret"), "outdir");
        link(Path::new("in.json"), "alias.json");
        link(Path::new("sub"), "subdir");
        link(Path::new("loop.json"), "loop.json");
        assert!(outside(open(&f, "out.json")));
        assert!(outside(open(&f, "dangling.json")));
        assert!(outside(open(&f, "outdir/s.json")));
        assert!(outside(open(&f, "outdir/missing.json")));
        assert!(open(&f, "alias.json").is_ok());
        assert!(open(&f, "subdir/deep.json").is_ok());
        assert_eq!(unusable(&f, "loop.json"), "too many symbolic links");
    }

    #[test]
    fn allowed_folders_widen_the_reach() {
        let tmp = folder("allow");
        let dir = tmp.path();
        let mut f = at(dir);
        f.allow.push(dir.join("secret"));
        assert!(open(&f, "../secret/s.json").is_ok());
        assert!(open(&f, dir.join("secret/s.json").to_str().unwrap()).is_ok());
        assert_eq!(unusable(&f, "../secret/missing.json"), "not found");
        assert!(outside(open(&f, "../../../../../../etc/passwd")));
    }
}
