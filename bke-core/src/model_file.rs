//! Model files: one self-describing JSON format for every fitted model of bke, written atomically.
//!
//! ```json
//! {"format": "bke-model", "kind": "bank-regression", "version": 1, "bke_version": "0.2.0",
//!  "columns": ["cement", "water"], "target": "compressive_strength", "model": { … }}
//! ```
//!
//! - `kind` names the model ([`ModelFile::KINDS`]); a reader refuses another kind, naming both.
//! - `version` is the layout of `model`; a reader refuses a newer version than it knows, naming
//!   both, and reads older ones (files of bke 0.1, written before this envelope existed, are read by
//!   [`ModelFile::from_legacy`]).
//! - `columns` and `target` record what the model was fitted on, so a later prediction can pick the
//!   same columns from a table.
//! - Every model is validated in full on load ([`ModelFile::validate`]): finite values, positive
//!   scales, consistent shapes — a hand-edited file fails with a message naming the field, not with
//!   `null`s later. The checks every kind shares are in [`fields`].
//! - [`save`] writes a temporary file in the target's directory and renames it over the target, so
//!   an interrupted or failed write leaves the old file (or none), never half of one
//!   ([`write_atomic`], also used for every other output file of the CLI).

use crate::CoreError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

pub mod fields;

/// The value of the `format` field.
pub const FORMAT: &str = "bke-model";

/// A fitted model that can be written to and read from a model file.
pub trait ModelFile: Serialize + DeserializeOwned {
    /// Every `kind` a file of this type may hold, e.g. `["bank-regression", "bank-classification"]`.
    const KINDS: &'static [&'static str];
    /// The newest layout version of `model` this build writes and reads.
    const VERSION: u32;

    /// The kind of this model (one of [`ModelFile::KINDS`]).
    fn kind(&self) -> &'static str;

    /// Errors unless the model can be used: finite values, positive scales, consistent shapes.
    fn validate(&self) -> Result<(), CoreError>;

    /// Reads a file written before the envelope existed (bke 0.1): `None` when `file` is not one.
    fn from_legacy(file: &Value) -> Option<Result<Saved<Self>, String>> {
        let _ = file;
        None
    }
}

/// A model with what its file records beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Saved<M> {
    /// The input columns the model was fitted on (empty when unnamed).
    pub columns: Vec<String>,
    /// The target column, for supervised models.
    pub target: Option<String>,
    /// The model.
    pub model: M,
}

impl<M> Saved<M> {
    /// A model with no column names.
    pub fn new(model: M) -> Self {
        Self { columns: Vec::new(), target: None, model }
    }
}

#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    format: String,
    kind: String,
    version: u32,
    #[serde(default)]
    bke_version: String,
    #[serde(default)]
    columns: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    model: T,
}

/// The model file's text (pretty JSON).
pub fn to_string<M: ModelFile>(saved: &Saved<M>) -> Result<String, CoreError> {
    saved.model.validate()?;
    let env = Envelope {
        format: FORMAT.into(),
        kind: saved.model.kind().into(),
        version: M::VERSION,
        bke_version: env!("CARGO_PKG_VERSION").into(),
        columns: saved.columns.clone(),
        target: saved.target.clone(),
        model: &saved.model,
    };
    serde_json::to_string_pretty(&env)
        .map_err(|e| CoreError::ModelFile(format!("cannot encode the model: {e}")))
}

/// Reads a model from the text of a model file; `source` names it in errors (e.g. the path).
pub fn from_str<M: ModelFile>(text: &str, source: &str) -> Result<Saved<M>, CoreError> {
    let fail = |msg: String| CoreError::ModelFile(format!("{source}: {msg}"));
    let value: Value =
        serde_json::from_str(text).map_err(|e| fail(format!("not a JSON model file ({e})")))?;
    let wanted = kinds_phrase(M::KINDS);
    let saved = match value.get("format").and_then(Value::as_str) {
        Some(FORMAT) => {
            let kind = value.get("kind").and_then(Value::as_str).unwrap_or("(none)").to_string();
            if !M::KINDS.contains(&kind.as_str()) {
                return Err(fail(format!("this is a '{kind}' model, but {wanted} model is needed")));
            }
            let version = value.get("version").and_then(Value::as_u64).unwrap_or(0);
            if version > u64::from(M::VERSION) {
                return Err(fail(format!(
                    "this '{kind}' model has layout version {version}, newer than the {} this bke {} \
                     reads: upgrade bke",
                    M::VERSION,
                    env!("CARGO_PKG_VERSION")
                )));
            }
            let env: Envelope<M> =
                serde_json::from_value(value).map_err(|e| fail(format!("malformed '{kind}' model: {e}")))?;
            Saved { columns: env.columns, target: env.target, model: env.model }
        }
        _ => match M::from_legacy(&value) {
            Some(r) => r.map_err(fail)?,
            None => {
                return Err(fail(format!(
                    "not a bke model file (no \"format\": \"{FORMAT}\"); {wanted} model is needed"
                )));
            }
        },
    };
    check_columns(&saved.columns, saved.target.as_deref()).map_err(fail)?;
    saved.model.validate().map_err(|e| fail(format!("invalid model: {e}")))?;
    Ok(saved)
}

/// The fields `columns` and `target` of every kind: non-empty names, each once, the target not
/// among the inputs (a prediction picks the columns by name, so a repeated name is ambiguous).
fn check_columns(columns: &[String], target: Option<&str>) -> Result<(), String> {
    for (i, c) in columns.iter().enumerate() {
        if c.trim().is_empty() {
            return Err(format!(
                "invalid field `columns`: entry {i} is an empty name; the file is corrupt: refit the model"
            ));
        }
        if let Some(j) = columns[..i].iter().position(|d| d == c) {
            return Err(format!(
                "invalid field `columns`: the name '{c}' appears twice (entries {j} and {i}); column names \
                 must be unique: the file is corrupt, refit the model"
            ));
        }
    }
    if let Some(t) = target {
        if columns.iter().any(|c| c == t) {
            return Err(format!(
                "invalid field `target`: '{t}' is also one of the input `columns`; the file is corrupt: \
                 refit the model"
            ));
        }
    }
    Ok(())
}

/// Writes the model file atomically ([`write_atomic`]).
pub fn save<M: ModelFile>(saved: &Saved<M>, path: &Path) -> Result<(), CoreError> {
    write_atomic(path, to_string(saved)?.as_bytes())
}

/// Reads and validates a model file.
pub fn load<M: ModelFile>(path: &Path) -> Result<Saved<M>, CoreError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| CoreError::ModelFile(format!("cannot read the model file {shown}: {e}")))?;
    from_str(&text, &shown)
}

/// Writes `bytes` to `path` through a temporary file in the same directory that is synced and then
/// renamed over `path`: readers see the old file or the new one, never a part. On any error the
/// temporary file is removed and `path` is untouched.
///
/// A process killed between the write and the rename (SIGKILL, power loss) may leave the
/// temporary file `.NAME.tmp-PID-N` beside the target, never a partial target.
pub fn write_atomic(path: impl AsRef<Path>, bytes: impl AsRef<[u8]>) -> Result<(), CoreError> {
    let mut f = AtomicFile::create(path.as_ref())?;
    f.write_all(bytes.as_ref()).map_err(|e| f.error("write", e))?;
    f.commit()
}

/// A file written in pieces (e.g. draws as a sampler makes them) that appears at its path only
/// when complete: the bytes go to a temporary file `.NAME.tmp-PID-N` in the target's directory,
/// [`AtomicFile::commit`] syncs it and renames it over the target; dropped without a commit (an
/// error, an interrupt), the temporary file is removed and the target is untouched. Buffered.
pub struct AtomicFile {
    target: std::path::PathBuf,
    tmp: std::path::PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl AtomicFile {
    /// Creates the temporary file for `target` (the directory must exist and be writable).
    pub fn create(target: &Path) -> Result<Self, CoreError> {
        Self::create_tagged(target, "tmp")
    }

    /// Like [`AtomicFile::create`], with `tag` in the temporary name (`.NAME.TAG-PID-N`), to tell
    /// apart several temporary files of one target.
    pub fn create_tagged(target: &Path, tag: &str) -> Result<Self, CoreError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let shown = target.display();
        let name =
            target.file_name().ok_or_else(|| CoreError::ModelFile(format!("{shown} is not a file path")))?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let tmp = dir.join(format!(
            ".{}.{tag}-{}-{}",
            name.to_string_lossy(),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let file = std::fs::File::create(&tmp)
            .map_err(|e| CoreError::ModelFile(format!("cannot write {shown}: {e}")))?;
        Ok(Self { target: target.to_path_buf(), tmp, file: Some(std::io::BufWriter::new(file)) })
    }

    /// The temporary file's path (removed on drop unless committed).
    pub fn temp_path(&self) -> &Path {
        &self.tmp
    }

    /// An error naming the target: `cannot WHAT TARGET: E`.
    pub fn error(&self, what: &str, e: std::io::Error) -> CoreError {
        CoreError::ModelFile(format!("cannot {what} {}: {e}", self.target.display()))
    }

    /// Flushes and syncs the temporary file and renames it over the target.
    pub fn commit(mut self) -> Result<(), CoreError> {
        let file = self.file.take().expect("an uncommitted AtomicFile holds its file");
        let result = file.into_inner().map_err(|e| e.into_error()).and_then(|f| f.sync_all());
        result.and_then(|()| std::fs::rename(&self.tmp, &self.target)).map_err(|e| self.error("write", e))
    }

    /// Reopens the finished temporary file for reading (e.g. to copy it into another file), after
    /// flushing what was written.
    pub fn reader(&mut self) -> Result<std::fs::File, CoreError> {
        self.flush().map_err(|e| self.error("write", e))?;
        std::fs::File::open(&self.tmp).map_err(|e| self.error("read back", e))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("an uncommitted AtomicFile holds its file").write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("an uncommitted AtomicFile holds its file").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // Committed: the temporary file was renamed (removing it fails harmlessly). Otherwise it
        // is removed and the target stays as it was.
        self.file.take();
        let _ = std::fs::remove_file(&self.tmp);
    }
}

fn kinds_phrase(kinds: &[&str]) -> String {
    let quoted: Vec<String> = kinds.iter().map(|k| format!("'{k}'")).collect();
    match quoted.as_slice() {
        [] => "a".into(),
        [one] => format!("a {one}"),
        [rest @ .., last] => format!("a {} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Toy {
        scale: f64,
    }

    impl ModelFile for Toy {
        const KINDS: &'static [&'static str] = &["toy"];
        const VERSION: u32 = 2;
        fn kind(&self) -> &'static str {
            "toy"
        }
        fn validate(&self) -> Result<(), CoreError> {
            crate::check_positive("scale", self.scale)
        }
        fn from_legacy(file: &Value) -> Option<Result<Saved<Self>, String>> {
            let s = file.get("old_scale")?.as_f64()?;
            Some(Ok(Saved::new(Toy { scale: s })))
        }
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Other;

    impl ModelFile for Other {
        const KINDS: &'static [&'static str] = &["other-a", "other-b"];
        const VERSION: u32 = 1;
        fn kind(&self) -> &'static str {
            "other-a"
        }
        fn validate(&self) -> Result<(), CoreError> {
            Ok(())
        }
    }

    fn dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("bke-model-file-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn round_trip_with_columns() {
        let saved = Saved { columns: vec!["a".into()], target: Some("y".into()), model: Toy { scale: 0.5 } };
        let text = to_string(&saved).unwrap();
        assert!(text.contains("\"format\": \"bke-model\"") && text.contains("\"kind\": \"toy\""));
        assert_eq!(from_str::<Toy>(&text, "m.json").unwrap(), saved);
    }

    #[test]
    fn refuses_other_kind_and_newer_version_naming_both() {
        let text = to_string(&Saved::new(Toy { scale: 1.0 })).unwrap();
        let e = from_str::<Other>(&text, "m.json").unwrap_err().to_string();
        assert!(e.contains("m.json") && e.contains("'toy'") && e.contains("'other-a' or 'other-b'"), "{e}");
        let newer = text.replace("\"version\": 2", "\"version\": 3");
        let e = from_str::<Toy>(&newer, "m.json").unwrap_err().to_string();
        assert!(e.contains("version 3") && e.contains("the 2 this bke"), "{e}");
    }

    #[test]
    fn validates_on_load_and_reads_legacy_files() {
        let text = to_string(&Saved::new(Toy { scale: 1.0 })).unwrap().replace("1.0", "-1.0");
        let e = from_str::<Toy>(&text, "m.json").unwrap_err().to_string();
        assert!(e.contains("invalid model") && e.contains("scale"), "{e}");
        assert_eq!(from_str::<Toy>(r#"{"old_scale": 3}"#, "old.json").unwrap().model.scale, 3.0);
        let e = from_str::<Toy>(r#"{"x": 1}"#, "x.json").unwrap_err().to_string();
        assert!(e.contains("not a bke model file"), "{e}");
        assert!(from_str::<Toy>("{", "x.json").unwrap_err().to_string().contains("not a JSON"));
    }

    #[test]
    fn refuses_repeated_or_empty_column_names_and_a_target_among_them() {
        let text = |cols: &[&str], target: Option<&str>| {
            let saved = Saved {
                columns: cols.iter().map(|c| c.to_string()).collect(),
                target: target.map(String::from),
                model: Toy { scale: 0.5 },
            };
            to_string(&saved).unwrap()
        };
        let e = from_str::<Toy>(&text(&["a", "b", "a"], None), "m.json").unwrap_err().to_string();
        assert!(e.contains("m.json") && e.contains("`columns`") && e.contains("'a' appears twice"), "{e}");
        let e = from_str::<Toy>(&text(&["a", ""], None), "m.json").unwrap_err().to_string();
        assert!(e.contains("`columns`") && e.contains("empty"), "{e}");
        let e = from_str::<Toy>(&text(&["a", "y"], Some("y")), "m.json").unwrap_err().to_string();
        assert!(e.contains("`target`"), "{e}");
        assert!(from_str::<Toy>(&text(&["a", "b"], Some("y")), "m.json").is_ok());
    }

    #[test]
    fn atomic_write_replaces_whole_and_leaves_nothing_on_error() {
        let d = dir();
        let path = d.join("model.json");
        save(&Saved::new(Toy { scale: 1.0 }), &path).unwrap();
        save(&Saved::new(Toy { scale: 2.0 }), &path).unwrap();
        assert_eq!(load::<Toy>(&path).unwrap().model.scale, 2.0);
        // An invalid model is refused before anything is written: the old file stays whole.
        assert!(save(&Saved::new(Toy { scale: f64::NAN }), &path).is_err());
        assert_eq!(load::<Toy>(&path).unwrap().model.scale, 2.0);
        // A write into a missing directory fails cleanly and leaves no temporary file behind.
        assert!(write_atomic(d.join("missing/model.json"), b"{}").is_err());
        let litter: Vec<_> = std::fs::read_dir(&d).unwrap().filter_map(|e| e.ok()).collect();
        assert_eq!(litter.len(), 1, "{litter:?}");
        // An error after the bytes are written (the rename onto a non-empty directory fails): the
        // target is untouched and the temporary file is removed.
        let target = d.join("occupied");
        std::fs::create_dir_all(target.join("inside")).unwrap();
        assert!(write_atomic(&target, b"new contents").is_err());
        assert!(target.join("inside").is_dir());
        let litter: Vec<_> = std::fs::read_dir(&d).unwrap().filter_map(|e| e.ok()).collect();
        assert_eq!(litter.len(), 2, "{litter:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_file_written_in_pieces_appears_only_on_commit() {
        let d = std::env::temp_dir().join(format!("bke-atomic-pieces-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let target = d.join("draws.csv");
        std::fs::write(&target, "old").unwrap();
        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(b"a,b\n").unwrap();
        f.write_all(b"1,2\n").unwrap();
        let mut copy = String::new();
        std::io::Read::read_to_string(&mut f.reader().unwrap(), &mut copy).unwrap();
        assert_eq!(copy, "a,b\n1,2\n");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old", "visible before the commit");
        // Dropped without a commit (an error or an interrupt): the old file stays, no litter.
        drop(f);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        let mut f = AtomicFile::create_tagged(&target, "chain-0").unwrap();
        assert!(f.temp_path().file_name().unwrap().to_string_lossy().starts_with(".draws.csv.chain-0-"));
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
