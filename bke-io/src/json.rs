//! JSON out: results printed on stdout, library values merged with a command's own fields.

use anyhow::bail;

/// Prints a JSON value on stdout. A closed pipe (e.g. `bke … | head`) is not an error.
pub fn emit(value: &serde_json::Value) -> anyhow::Result<()> {
    use std::io::Write;
    let text = serde_json::to_string_pretty(value)?;
    match writeln!(std::io::stdout().lock(), "{text}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// The JSON of a library value (its serde form, as the Python package sees it) with the command's
/// own fields (backend, paths, timings) added. Errors unless both are JSON objects.
/// A non-finite number anywhere in `value` is an error naming it ([`crate::finite::check`]), never
/// a `null` in the output.
pub fn merge(value: &impl serde::Serialize, extra: serde_json::Value) -> anyhow::Result<serde_json::Value> {
    crate::finite::check("the result", value)?;
    let mut v = serde_json::to_value(value)?;
    match (&mut v, extra) {
        (serde_json::Value::Object(m), serde_json::Value::Object(e)) => m.extend(e),
        _ => bail!("internal error: a command's JSON output must be an object"),
    }
    Ok(v)
}
