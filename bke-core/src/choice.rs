//! Options with a fixed list of named values ([`Choice`]): the one list of names and help lines
//! that the CLI's value parser (`--select`, `--median-convention`, `--agg-kernels`) and the Python
//! keywords read, so a new value is one enum variant here and nothing in a front end.

mod options;

use crate::CoreError;

/// An option with a fixed list of named values. Parsing (`FromStr`) accepts exactly the names of
/// [`Choice::ALL`] and errors with the library's message otherwise.
pub trait Choice: Copy + PartialEq + std::str::FromStr<Err = CoreError> + Send + Sync + 'static {
    /// `(value, name, one line of help)`, in the order help lists them.
    const ALL: &'static [(Self, &'static str, &'static str)];

    /// The name users type and outputs print.
    fn name(self) -> &'static str {
        Self::entry(self).1
    }

    /// One line of help.
    fn help(self) -> &'static str {
        Self::entry(self).2
    }

    /// The names of the values that `keep` keeps, as "a, b or c".
    fn names_where(keep: impl Fn(Self) -> bool) -> String {
        let names: Vec<&str> = Self::ALL.iter().filter(|(v, _, _)| keep(*v)).map(|(_, n, _)| *n).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }

    /// The value named `name`, if any.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(_, n, _)| *n == name).map(|(v, _, _)| *v)
    }

    /// This value's entry of [`Choice::ALL`].
    fn entry(self) -> &'static (Self, &'static str, &'static str) {
        Self::ALL.iter().find(|(v, _, _)| *v == self).expect("every value is listed in ALL")
    }
}
