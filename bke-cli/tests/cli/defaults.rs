//! The defaults `bke … --help` shows are the library's: every flag with a default is either listed
//! here with the `…Params::default()` field it shows, or is one of the few CLI-only defaults.

use bke_bank::BankParams;
use bke_bank::cv::{CvParams, Method};
use bke_core::bayes::SampleParams;
use bke_core::causal::PcParams;
use bke_core::density::{KernelStudentTParams, SelectOptions};
use bke_core::embedding::{BkePosterior, EmbeddingParams};
use bke_core::hypothesis::{AggParams, BklParams, HsicParams, MmdParams, WitnessParams};
use bke_core::nuts::NutsParams;
use bke_core::{Choice, MedianConvention};
use bke_dme::abc::{RejectionAbcParams, SmcAbcParams};
use bke_dme::herding::HerdingParams;
use bke_dme::kbr::KbrParams;
use bke_dme::learn::MultiStartOptions;
use bke_dme::ttblr::TtblrParams;
use bke_dme::ttgp::TtgpParams;
use bke_linalg::BackendKind;
use std::collections::BTreeMap;
use std::process::Command;

/// Flags whose default no library parameter holds (a CLI convenience): `(command, flag id)`.
const CLI_ONLY: &[(&str, &str)] = &[
    ("bke lfi", "method"),
    ("bke bank fit", "task"),
    ("bke bank cv", "task"),
    ("bke dme fit", "model"),
    ("bke density sample", "n"),
    ("bke density sample", "seed"),
    ("bke witness", "draws"),
    ("bke witness", "warmup"),
];

/// Flags whose help says in words what happens without them, as `[default: …]` (clap sets no
/// default): `(command, flag id, the words)`. A clap default added to one shows after the words.
const IN_WORDS: &[(&str, &str, &str)] = &[
    ("bke bank cv", "prior_precision", "learned"),
    ("bke bank cv", "weight_prior_variance", "learned"),
    ("bke bank fit", "prior_precision", "learned"),
    ("bke bank fit", "weight_prior_variance", "learned"),
    ("bke dme fit", "x_cols", "all"),
    ("bke dme fit", "y_cols", "all"),
    ("bke dme loglik", "x_cols", "all"),
    ("bke dme loglik", "y_cols", "all"),
    ("bke dme predict", "at_cols", "all"),
    ("bke lfi", "delta", "1"),
    ("bke lfi", "lambda", "1e-3"),
];

fn s(v: impl ToString) -> String {
    v.to_string()
}

/// The library default each flag shows, by flag id, for the flags several commands share.
fn shared() -> Vec<(&'static str, String)> {
    let (bkl, agg) = (BklParams::default(), AggParams::default());
    vec![
        ("backend", s(BackendKind::default_kind().name())),
        ("median_convention", s(MedianConvention::default().name())),
        ("bkl_landmarks", s(bkl.landmarks)),
        ("bkl_tau2", s(bkl.tau2)),
        ("bkl_prior", bkl.prior.name()),
        ("agg_weights", s(agg.weights.name())),
        ("agg_kernels", s(Choice::name(agg.families))),
    ]
}

/// `(command, flag id, library default)` for the flags of one command.
fn per_command() -> Vec<(&'static str, &'static str, String)> {
    let (mmd, hsic, pc) = (MmdParams::default(), HsicParams::default(), PcParams::default());
    let (emb, witness) = (EmbeddingParams::default(), WitnessParams::default());
    let (nuts, sample) = (NutsParams::default(), SampleParams::default());
    let (bank, density, select) =
        (BankParams::default(), KernelStudentTParams::default(), SelectOptions::default());
    let (ttgp, search) = (TtgpParams::default(), MultiStartOptions::default());
    let (kbr, smc) = (KbrParams::default(), SmcAbcParams::default());
    let mut rows = vec![
        ("bke test mmd", "permutations", s(mmd.permutations)),
        ("bke test mmd", "alpha", s(mmd.alpha)),
        ("bke test mmd", "seed", s(mmd.seed)),
        ("bke test mmd", "statistic", s(mmd.statistic.name())),
        ("bke test mmd", "null", s(mmd.null.name())),
        ("bke test hsic", "permutations", s(hsic.permutations)),
        ("bke test hsic", "alpha", s(hsic.alpha)),
        ("bke test hsic", "seed", s(hsic.seed)),
        ("bke test hsic", "statistic", s(hsic.statistic.name())),
        ("bke test hsic", "null", s(hsic.null.name())),
        ("bke witness", "tau2", s(witness.tau2)),
        ("bke witness", "prior", witness.prior.name()),
        ("bke witness", "level", s(witness.level)),
        ("bke witness", "seed", s(BklParams::default().seed)),
        ("bke witness", "chains", s(nuts.chains)),
        ("bke witness", "lengthscale_prior", sample.lengthscale_prior.name()),
        ("bke witness", "tau2_prior", sample.tau2_prior.name()),
        ("bke causal pc", "prewhiten", pc.prewhiten.name()),
        ("bke causal pc", "alpha", s(pc.alpha)),
        ("bke causal pc", "statistic", s(pc.ci.hsic.statistic.name())),
        ("bke causal pc", "permutations", s(pc.ci.hsic.permutations)),
        ("bke causal pc", "orientation", s(pc.orientation.name())),
        ("bke causal pc", "ci", s(pc.ci.method.name())),
        ("bke causal pc", "kci_null", s(pc.ci.kci.null.name())),
        ("bke causal pc", "kci_z", s(pc.ci.kci.z_rule.name())),
        ("bke causal pc", "kci_hyper_points", s(pc.ci.kci.hyper_points)),
        ("bke causal pc", "seed", s(pc.ci.hsic.seed)),
        ("bke embed fit", "grid_points", s(emb.grid_points)),
        ("bke embed fit", "seed", s(emb.seed)),
        ("bke embed posterior", "seed", s(BkePosterior::DEFAULT_SEED)),
        ("bke embed sample", "chains", s(nuts.chains)),
        ("bke embed sample", "draws", s(nuts.draws)),
        ("bke embed sample", "warmup", s(nuts.warmup)),
        ("bke embed sample", "seed", s(nuts.seed)),
        ("bke embed sample", "max_depth", s(nuts.max_depth)),
        ("bke embed sample", "target_accept", s(nuts.target_accept)),
        ("bke embed sample", "lengthscale_prior", sample.lengthscale_prior.name()),
        ("bke embed sample", "tau2_prior", sample.tau2_prior.name()),
        ("bke embed sample", "prior", sample.prior.name()),
        ("bke density fit", "seed", s(select.seed)),
        ("bke density fit", "kernel", density.family.spec()),
        ("bke density fit", "folds", s(select.folds)),
        ("bke density fit", "margin", s(select.margin)),
        ("bke lfi", "herd", s(HerdingParams::default().samples)),
        ("bke lfi", "starts", s(search.starts)),
        ("bke lfi", "seed", s(search.seed)),
        ("bke lfi", "kbr_variant", s(kbr.variant.name())),
        ("bke lfi", "kbr_inverse", s(kbr.inverse.name())),
        ("bke lfi", "abc_quantile", s(RejectionAbcParams::default().quantile)),
        ("bke lfi", "abc_simulations", s(smc.max_simulations)),
        ("bke lfi", "particles", s(smc.particles)),
        ("bke bank cv", "folds", s(CvParams::new(Method::Bank, Default::default()).folds)),
        ("bke bank cv", "method", s(Method::Bank.name())),
        ("bke dme fit", "features", s(TtblrParams::default().features)),
        ("bke dme fit", "seed", s(search.seed)),
        ("bke dme fit", "starts", s(search.starts)),
        ("bke dme fit", "spread", s(search.spread)),
        ("bke dme fit", "max_iter", s(search.lbfgs.max_iter)),
    ];
    for cmd in ["bke embed loglik", "bke embed fit", "bke embed posterior"] {
        rows.push((cmd, "prior", emb.prior.name()));
    }
    for cmd in ["bke embed loglik", "bke embed posterior"] {
        rows.push((cmd, "tau2", s(emb.tau2)));
    }
    for cmd in ["bke bank fit", "bke bank cv"] {
        rows.extend([
            (cmd, "frequencies", s(bank.frequencies)),
            (cmd, "iterations", s(bank.iterations)),
            (cmd, "samples", s(bank.samples)),
            (cmd, "seed", s(bank.seed)),
            (cmd, "relevance", s(bank.relevance.name())),
            (cmd, "kappa0", s(bank.prior.kappa0)),
        ]);
    }
    for cmd in ["bke dme loglik", "bke dme fit"] {
        rows.extend([
            (cmd, "lengthscale_x", s(ttgp.kernel_x.lengthscales()[0])),
            (cmd, "lengthscale_y", s(ttgp.kernel_y.lengthscales()[0])),
            (cmd, "sigma", s(ttgp.sigma)),
            (cmd, "kernel", ttgp.kernel_x.family().spec()),
            (cmd, "form", s(ttgp.form.name())),
        ]);
    }
    rows
}

/// The long help (`--help`) of `bke path…`.
fn long_help(path: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_bke")).args(path).arg("--help").output().unwrap();
    assert!(out.status.success(), "bke {path:?} --help");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands a help lists under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    let section = help.lines().skip_while(|l| *l != "Commands:").skip(1).take_while(|l| !l.is_empty());
    section
        .filter_map(|l| l.strip_prefix("  ").filter(|name| !name.starts_with(' ')))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Each flag of a help, by id (`--bkl-tau2` is `bkl_tau2`), with its lines (the flag's own first).
fn flag_blocks(help: &str) -> Vec<(String, Vec<&str>)> {
    let mut blocks: Vec<(String, Vec<&str>)> = Vec::new();
    for line in help.lines() {
        let text = line.trim_start();
        let is_flag = line.len() - text.len() <= 6 && text.starts_with('-');
        let long = text.split_whitespace().take(2).find_map(|t| t.strip_prefix("--")).filter(|_| is_flag);
        if let Some(name) = long {
            blocks.push((name.replace('-', "_"), vec![text]));
        } else if let Some((_, lines)) = blocks.last_mut() {
            lines.push(text);
        }
    }
    blocks
}

/// The default clap appends to a flag's help (`[default: X]`, last but for the possible values), not
/// one that the prose of the help mentions (`[default: 1 / median pairwise distance]`: clap would
/// quote a value with spaces).
fn shown_default(help: &str) -> Option<&str> {
    let start = help.rfind("[default: ")? + "[default: ".len();
    let (value, rest) = help[start..].split_once(']')?;
    let rest = rest.trim();
    let last = rest.is_empty() || rest.starts_with("[possible values:");
    (last && !value.contains(char::is_whitespace)).then_some(value)
}

/// Every command's flags with a default: `(command path, flag id) → default`.
fn help_defaults() -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    let mut paths = vec![Vec::<String>::new()];
    while let Some(path) = paths.pop() {
        let help = long_help(&path);
        paths.extend(subcommands(&help).into_iter().map(|sub| [path.clone(), vec![sub]].concat()));
        let cmd = std::iter::once("bke".to_string()).chain(path).collect::<Vec<_>>().join(" ");
        for (id, lines) in flag_blocks(&help) {
            if let Some(value) = shown_default(&lines.join(" ")) {
                out.insert((cmd.clone(), id), value.to_string());
            }
        }
    }
    out
}

#[test]
fn help_shows_the_library_defaults() {
    let shown = help_defaults();
    let shared: BTreeMap<_, _> = shared().into_iter().collect();
    let listed: BTreeMap<_, _> =
        per_command().into_iter().map(|(c, id, v)| ((c.to_string(), id.to_string()), v)).collect();
    let mut unexplained = Vec::new();
    for ((cmd, id), value) in &shown {
        let (cmd, id, value) = (cmd.as_str(), id.as_str(), value.as_str());
        if CLI_ONLY.contains(&(cmd, id)) || IN_WORDS.contains(&(cmd, id, value)) {
            continue;
        }
        match listed.get(&(cmd.to_string(), id.to_string())).or_else(|| shared.get(id)) {
            Some(want) => assert_eq!(value, want, "`{cmd} --{id}`"),
            None => unexplained.push(format!("`{cmd} --{id}` shows default {value}")),
        }
    }
    assert!(unexplained.is_empty(), "which library fields? {unexplained:#?}");
    for (cmd, id) in listed.keys() {
        assert!(shown.contains_key(&(cmd.clone(), id.clone())), "`{cmd} --{id}` has no default any more");
    }
}

#[test]
fn value_parsers_list_the_library_choices() {
    let help = long_help(&["test".into(), "mmd".into()]);
    let (_, select) = flag_blocks(&help).into_iter().find(|(id, _)| id == "select").expect("--select");
    let names: Vec<&str> = select.iter().filter_map(|l| l.strip_prefix("- ")?.split(':').next()).collect();
    let want: Vec<&str> = bke_core::hypothesis::select::SelectRule::ALL.iter().map(|(_, n, _)| *n).collect();
    assert_eq!(names, want);
}
