//! Tidy checks over the workspace's sources (as rust-analyzer's `xtask/src/tidy.rs`), run by
//! `cargo test --workspace`:
//!
//! * the model crates (`bke-core`, `bke-bank`, `bke-dme`) are generic over `bke_linalg::Backend`:
//!   no file of theirs names a backend (`Faer`, `Nalgebra`, `OpenBlas`) or tests a Cargo feature
//!   (`cfg(feature`); tests there use `bke_linalg::DefaultBackend`, and the comparison across
//!   backends lives in `backend-suite/tests/backend_suite.rs`;
//! * no Rust source file is longer than [`MAX_LINES`] lines unless a line
//!   `// tidy: long because <reason>` (or `//! tidy: …`, which rustdoc shows) near its top says why,
//!   and a file that is short again drops its reason, so stale reasons do not accumulate;
//! * every public item is documented: `missing_docs` is on for the whole workspace, every crate
//!   inherits the workspace lints, and no source file switches the lint off;
//! * the design document the code cites is the repository's `docs/DESIGN.md` (no citation of a copy
//!   outside the repository);
//! * citations have one form (checked on comment blocks joined across lines): a seed is cited with its
//!   number, `seed 004 Def. 4.4`, `seed 000 eq. (7)`, `seed 001 §3.2` (never `seed §5`), and equation
//!   numbers are parenthesised (`eq. (5)`, not `eq. 5`), in every model crate; in [`SOURCED`] every
//!   numbered part of a paper (`eq. (…)`, `Def.`, `Thm`, `Lemma`, `Algorithm`, `§`, `App.`) also names
//!   its source just before it: `seed NNN`, `docs/DESIGN.md`, or another work by authors and year.

use std::fs;
use std::path::{Path, PathBuf};

/// Longest a source file may be without a written reason.
const MAX_LINES: usize = 700;
/// The marker of a written reason (after `//` or `//!`); it must appear within the first
/// [`REASON_WITHIN`] lines.
const REASON: &str = "tidy: long because ";
/// How near the top the reason must be.
const REASON_WITHIN: usize = 10;
/// The crates whose code must be generic over the backend.
const MODEL_CRATES: [&str; 3] = ["bke-core", "bke-bank", "bke-dme"];
/// Backend names a model crate must not mention.
const BACKEND_NAMES: [&str; 3] = ["Faer", "Nalgebra", "OpenBlas"];
/// The folders whose every citation names its source (the rest of `bke-core` and `bke-bank` still
/// cite their own seed's sections bare, e.g. `(§3.2)`; add them here once they name it).
const SOURCED: [&str; 2] = ["bke-dme/src", "bke-core/src/hypothesis"];
/// How many characters before a citation its source may start (`seed 004 Thm 5.3 (3), (4) and
/// Def. 4.4` cites both from one source).
const SOURCE_WITHIN: usize = 100;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

/// Every source file under `dir` whose name ends in `ext`: the files git tracks plus the untracked
/// ones it does not ignore, so build outputs are skipped whatever their folder is called
/// (`CARGO_TARGET_DIR=target-py` included). Outside a git checkout (a source tarball) the folders
/// are walked instead, skipping hidden folders and every folder that holds a `CACHEDIR.TAG` (cargo
/// marks each build directory with one).
fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = git_files(dir).unwrap_or_else(|| walked_files(dir));
    out.retain(|p| p.to_string_lossy().ends_with(ext) && p.is_file());
    out.sort();
    out
}

/// The files git lists under `dir` (tracked, and untracked but not ignored); `None` without git.
fn git_files(dir: &Path) -> Option<Vec<PathBuf>> {
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.split('\0').filter(|f| !f.is_empty()).map(|f| dir.join(f)).collect())
}

/// Every file under `dir`, skipping hidden folders and build directories.
fn walked_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if d.join("CACHEDIR.TAG").exists() {
            continue;
        }
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if path.is_dir() {
                if !hidden && entry.file_name() != "node_modules" {
                    stack.push(path);
                }
            } else {
                out.push(path);
            }
        }
    }
    out
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn relative(path: &Path) -> String {
    path.strip_prefix(workspace_root()).unwrap_or(path).display().to_string()
}

/// Whether `line` holds `word` as a whole identifier.
fn mentions_word(line: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(word).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// The workspace members listed in the root manifest.
fn members() -> Vec<String> {
    let manifest = read(&workspace_root().join("Cargo.toml"));
    let start = manifest.find("members").expect("the root manifest lists its members");
    let list = &manifest[start..];
    let list = &list[list.find('[').unwrap() + 1..list.find(']').unwrap()];
    list.split(',').map(|m| m.trim().trim_matches('"').to_string()).filter(|m| !m.is_empty()).collect()
}

fn fail_if_any(problems: Vec<String>, what: &str) {
    assert!(problems.is_empty(), "{what}:\n  {}", problems.join("\n  "));
}

#[test]
fn model_crates_do_not_name_backends_or_features() {
    let mut problems = Vec::new();
    for krate in MODEL_CRATES {
        for path in files_with_extension(&workspace_root().join(krate), ".rs") {
            for (i, line) in read(&path).lines().enumerate() {
                let named: Vec<&str> =
                    BACKEND_NAMES.into_iter().filter(|name| mentions_word(line, name)).collect();
                if !named.is_empty() || line.contains("cfg(feature") {
                    problems.push(format!("{}:{}: {}", relative(&path), i + 1, line.trim()));
                }
            }
        }
    }
    fail_if_any(
        problems,
        "model crates must be generic over bke_linalg::Backend (tests use bke_linalg::DefaultBackend; \
         cross-backend checks belong in backend-suite/tests/backend_suite.rs)",
    );
}

#[test]
fn long_files_say_why() {
    let mut problems = Vec::new();
    for path in files_with_extension(&workspace_root(), ".rs") {
        let text = read(&path);
        let lines = text.lines().count();
        let has_reason = text.lines().take(REASON_WITHIN).any(|l| {
            let comment = l.strip_prefix("//!").or_else(|| l.strip_prefix("//"));
            comment.is_some_and(|c| c.trim_start().starts_with(REASON))
        });
        if lines > MAX_LINES && !has_reason {
            problems.push(format!(
                "{}: {lines} lines; split it, or write `// {REASON}…` in its first {REASON_WITHIN} lines",
                relative(&path)
            ));
        }
        if lines <= MAX_LINES && has_reason {
            problems
                .push(format!("{}: {lines} lines but still gives a reason for being long", relative(&path)));
        }
    }
    fail_if_any(problems, &format!("source files over {MAX_LINES} lines need a written reason"));
}

#[test]
fn every_public_item_is_documented() {
    let root = read(&workspace_root().join("Cargo.toml"));
    let rust_lints = root.split("[workspace.lints.rust]").nth(1).expect("workspace lints for rustc");
    let rust_lints = rust_lints.split("\n[").next().unwrap();
    assert!(
        rust_lints.lines().any(|l| {
            let l = l.replace(' ', "");
            l == "missing_docs=\"warn\"" || l == "missing_docs=\"deny\""
        }),
        "the workspace must set missing_docs = \"warn\" (CI turns warnings into errors)"
    );
    let mut problems = Vec::new();
    for member in members() {
        let manifest = read(&workspace_root().join(&member).join("Cargo.toml"));
        let inherits = manifest.split("[lints]").nth(1).is_some_and(|rest| {
            rest.lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .is_some_and(|l| l.replace(' ', "") == "workspace=true")
        });
        if !inherits {
            problems.push(format!("{member}/Cargo.toml: add `[lints]` with `workspace = true`"));
        }
    }
    let switched_off = concat!("allow(", "missing_docs)");
    for path in files_with_extension(&workspace_root(), ".rs") {
        for (i, line) in read(&path).lines().enumerate() {
            if line.contains(switched_off) {
                problems.push(format!("{}:{}: {}", relative(&path), i + 1, line.trim()));
            }
        }
    }
    fail_if_any(problems, "every crate must document its public items");
}

#[test]
fn design_citations_point_into_the_repository() {
    assert!(workspace_root().join("docs/DESIGN.md").is_file(), "docs/DESIGN.md is missing");
    let name = concat!("DESIGN", ".md");
    let mut problems = Vec::new();
    for path in files_with_extension(&workspace_root(), ".rs") {
        for (i, line) in read(&path).lines().enumerate() {
            let cites_elsewhere = line.match_indices(name).any(|(at, _)| !line[..at].ends_with("docs/"));
            if cites_elsewhere {
                problems.push(format!("{}:{}: {}", relative(&path), i + 1, line.trim()));
            }
        }
    }
    fail_if_any(problems, "cite the design document as docs/DESIGN.md");
}

/// The comment blocks of a Rust source (`//`, `///`, `//!` lines), each joined into one line, with
/// the number of its first line.
fn comment_blocks(text: &str) -> Vec<(usize, String)> {
    let mut blocks: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let body = t.strip_prefix("//!").or_else(|| t.strip_prefix("///")).or_else(|| t.strip_prefix("//"));
        match body {
            Some(b) if open => {
                let last = blocks.last_mut().expect("an open block");
                last.1.push(' ');
                last.1.push_str(b.trim());
            }
            Some(b) => blocks.push((i + 1, b.trim().to_string())),
            None => {}
        }
        open = body.is_some();
    }
    blocks
}

/// Parts of a paper a citation points at, and whether a number (else a capital letter) follows.
const CITED_PARTS: [(&str, bool); 8] = [
    ("eq. (", false),
    ("Eq. (", false),
    ("Def. ", true),
    ("Thm ", true),
    ("Lemma ", true),
    ("Algorithm ", true),
    ("§", true),
    ("App. ", false),
];

/// The citation-form problems of one comment block: a seed without its number, an equation number
/// without parentheses, and (when `sourced`) a cited part with no source just before it.
fn citation_problems(block: &str, sourced: bool) -> Vec<String> {
    let mut problems = Vec::new();
    for (at, _) in block.match_indices("seed ") {
        let rest = &block[at + 5..];
        let numbered = starts_with_seed_number(rest);
        let cites_part = CITED_PARTS.iter().any(|(p, _)| rest.starts_with(p.trim_end_matches(" (")))
            || rest.starts_with("eq")
            || rest.starts_with("Appendix");
        if cites_part && !numbered {
            problems.push(format!("`seed {}…` names no seed (write `seed NNN …`)", head(rest, 12)));
        }
    }
    for pattern in ["eq. ", "Eq. "] {
        for (at, _) in block.match_indices(pattern) {
            if block[at + 4..].starts_with(|c: char| c.is_ascii_digit()) {
                problems.push(format!("`{}`: parenthesise the equation number", head(&block[at..], 12)));
            }
        }
    }
    if sourced {
        for (part, numbered) in CITED_PARTS {
            for (at, _) in block.match_indices(part) {
                let next = block[at + part.len()..].chars().next();
                let is_citation = part.ends_with('(')
                    || next
                        .is_some_and(|c| if numbered { c.is_ascii_digit() } else { c.is_ascii_uppercase() });
                let before: String = {
                    let chars: Vec<char> = block[..at].chars().collect();
                    chars[chars.len().saturating_sub(SOURCE_WITHIN)..].iter().collect()
                };
                if is_citation && !names_a_source(&before) {
                    problems.push(format!(
                        "`{}` names no source within {SOURCE_WITHIN} characters before it (`seed NNN`, \
                         `docs/DESIGN.md`, or authors and year)",
                        head(&block[at..], 16)
                    ));
                }
            }
        }
    }
    problems
}

/// Whether `s` starts with a seed number (three digits).
fn starts_with_seed_number(s: &str) -> bool {
    s.bytes().take(3).filter(u8::is_ascii_digit).count() == 3
}

/// The first `n` characters of `s`.
fn head(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Whether `text` names a cited work: a seed with its number, the design document, or authors and
/// year (`et al.`, or a year 1900–2099).
fn names_a_source(text: &str) -> bool {
    let seed = text.match_indices("seed ").any(|(at, _)| starts_with_seed_number(&text[at + 5..]));
    let chars: Vec<char> = text.chars().collect();
    let year = chars.windows(6).any(|w| {
        !w[0].is_alphanumeric()
            && (w[1..3] == ['1', '9'] || w[1..3] == ['2', '0'])
            && w[3..5].iter().all(char::is_ascii_digit)
            && !w[5].is_alphanumeric()
    });
    seed || year || text.contains("docs/DESIGN.md") || text.contains("et al")
}

#[test]
fn citations_name_their_seed() {
    let mut problems = Vec::new();
    for krate in MODEL_CRATES {
        for path in files_with_extension(&workspace_root().join(krate), ".rs") {
            let rel = relative(&path);
            let sourced = SOURCED.iter().any(|dir| rel.starts_with(dir));
            for (line, block) in comment_blocks(&read(&path)) {
                for p in citation_problems(&block, sourced) {
                    problems.push(format!("{rel}:{line} (comment block): {p}"));
                }
            }
        }
    }
    fail_if_any(problems, "cite as `seed 004 Def. 4.4`, `seed 000 eq. (7)`, `seed 001 §3.2`");
}

#[test]
fn citation_form_is_recognised() {
    assert!(citation_problems("the ML-II (seed 000 eq. (33)) and Def. 4.4", true).is_empty());
    assert!(citation_problems("(Gretton et al. 2012, eq. (5))", true).is_empty());
    assert_eq!(citation_problems("as in seed §5", false).len(), 1);
    assert_eq!(citation_problems("(Rasmussen & Williams 2006, eq. 5.9)", false).len(), 1);
    assert_eq!(citation_problems("the parametric DME (Def. 4.5)", true).len(), 1);
    assert!(citation_problems("the parametric DME (Def. 4.5)", false).is_empty());
    assert!(citation_problems("an algorithm: Algorithm of choice, § sign", true).is_empty());
}

#[test]
fn word_matching_respects_identifier_boundaries() {
    assert!(mentions_word("use bke_linalg::Faer;", "Faer"));
    assert!(mentions_word("f::<Nalgebra>(x)", "Nalgebra"));
    assert!(!mentions_word("FaerLike and MyFaer", "Faer"));
    assert!(!mentions_word("DefaultBackend", "Faer"));
}

#[test]
fn build_directories_are_not_walked_whatever_their_name() {
    let dir = std::env::temp_dir().join(format!("bke-tidy-walk-{}", std::process::id()));
    let build = dir.join("target-py/debug");
    fs::create_dir_all(&build).unwrap();
    fs::write(dir.join("target-py/CACHEDIR.TAG"), "Signature: 8a477f597d28d172789f06886806bc55").unwrap();
    fs::write(build.join("generated.rs"), "fn main() {}").unwrap();
    fs::write(dir.join("lib.rs"), "").unwrap();
    let found = walked_files(&dir);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found, vec![dir.join("lib.rs")]);
}

/// The package selections the project's commands build (`cargo xtask test`: the workspace's tests
/// and the Python extension through maturin; `cargo xtask demo`/`repro`: the `bke` binary and the
/// report's binaries). Each shared dependency must have one feature set across them, or cargo
/// compiles it — and everything above it — once per selection.
const BUILD_SELECTIONS: [&[&str]; 5] = [
    &["--workspace", "--exclude", "bke-py", "--exclude", "bke-fuzz", "-e", "normal,build,dev"],
    &["-p", "bke-py", "-e", "normal,build"],
    &["-p", "bke-cli", "-p", "bke-report", "-e", "normal,build"],
    &["-p", "bke-report", "-e", "normal,build"],
    &["-p", "bke-bench", "-e", "normal,build"],
];

/// `name version` → enabled features, as `cargo tree` resolves them for one selection.
fn resolved_features(selection: &[&str]) -> std::collections::BTreeMap<String, String> {
    let out = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["tree", "--locked", "--offline", "--prefix", "none", "-f", "{p}|{f}"])
        .args(selection)
        .current_dir(workspace_root())
        .output()
        .expect("running cargo tree");
    assert!(out.status.success(), "cargo tree {selection:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('|'))
        .map(|(p, f)| {
            let package = p.split(" (").next().unwrap_or(p).trim().to_string();
            (package, f.split(" (").next().unwrap_or(f).trim().to_string())
        })
        .collect()
}

#[test]
fn every_build_sees_one_feature_set_per_dependency() {
    let resolved: Vec<_> = BUILD_SELECTIONS.iter().map(|s| resolved_features(s)).collect();
    let mut problems = Vec::new();
    for (i, a) in resolved.iter().enumerate() {
        for (package, features) in a {
            for (j, b) in resolved.iter().enumerate().skip(i + 1) {
                if let Some(other) = b.get(package).filter(|f| *f != features) {
                    problems.push(format!(
                        "{package}: [{features}] in `{}` but [{other}] in `{}`",
                        BUILD_SELECTIONS[i].join(" "),
                        BUILD_SELECTIONS[j].join(" ")
                    ));
                }
            }
        }
    }
    fail_if_any(
        problems,
        "dependencies compiled with different features by different commands (each is then compiled \
         twice): add the union of their features to workspace-hack/Cargo.toml",
    );
}

/// The "may use" column of `docs/ARCHITECTURE.md`'s crate table: folder → allowed bke packages.
fn crate_rules() -> Vec<(String, Vec<String>)> {
    let doc = read(&workspace_root().join("docs/ARCHITECTURE.md"));
    let package =
        |name: &str| if name == "workspace-hack" { format!("bke-{name}") } else { name.to_string() };
    let ticked = |cell: &str| -> Vec<String> { cell.split('`').skip(1).step_by(2).map(package).collect() };
    doc.lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split('|').collect();
            let folder = cells.first()?.split('`').nth(1)?.to_string();
            Some((folder, ticked(cells.last()?)))
        })
        .collect()
}

/// The bke packages a manifest depends on (any section: normal, dev or build).
fn bke_dependencies(manifest: &str) -> Vec<String> {
    manifest
        .lines()
        .filter_map(|l| {
            let name = l.split(['=', '.', ' ']).next()?;
            name.starts_with("bke-").then(|| name.to_string())
        })
        .collect()
}

#[test]
fn crates_use_only_what_the_architecture_allows() {
    let rules = crate_rules();
    let mut problems = Vec::new();
    for member in members() {
        let Some((_, allowed)) = rules.iter().find(|(folder, _)| *folder == member) else {
            problems.push(format!("{member}: a workspace member without a row in docs/ARCHITECTURE.md"));
            continue;
        };
        let manifest = read(&workspace_root().join(&member).join("Cargo.toml"));
        for dep in bke_dependencies(&manifest) {
            if !allowed.contains(&dep) {
                problems.push(format!("{member} uses {dep}, which docs/ARCHITECTURE.md does not allow"));
            }
        }
    }
    fail_if_any(problems, "crate dependencies outside docs/ARCHITECTURE.md's rules");
}
