//! The PC algorithm, order-independent ("PC-stable", Colombo & Maathuis 2014, Alg. 4.1), with the
//! kernel conditional-independence test of [`super::ci`] (seed 000 §5, Fig. 4).
//!
//! **Skeleton.** Start from the complete undirected graph. For `ℓ = 0, 1, 2, …`: freeze the
//! adjacency sets `a(i)` of the current graph; for every edge `i − j` with `|a(i) ∖ {j}| ≥ ℓ` or
//! `|a(j) ∖ {i}| ≥ ℓ`, test `X_i ⫫ X_j | X_S` for the subsets `S ⊆ a(i) ∖ {j}` of size `ℓ` in
//! lexicographic order, then those of `a(j) ∖ {i}` not yet tried, stopping at the first `p > α`;
//! that `S` is the separating set. Edges found independent are removed only after the whole level,
//! so no test depends on the order of the others. Stop when no edge has enough neighbours (or at
//! `max_condition`).
//!
//! **Parallel, and independent of the thread count.** The tests of one level run in rounds: in each
//! round every edge still being tested runs its next test. The GP regressions the round needs are
//! computed first, in parallel and each once ([`CiTester::prefetch`]), then the HSIC tests in
//! parallel; each test's permutations are seeded by its variables. Every edge runs exactly the
//! sequence of tests the sequential algorithm would.
//!
//! **Orientation.** Each unshielded triple `i − k − j` is classified as a collider, a non-collider
//! or ambiguous by [`PcParams::orientation`] ([`super::orient`]: the standard rule — collider when
//! `k` is not in the separating set of `(i, j)` — or the conservative, majority (the default) or
//! max-p rules, which test `i ⫫ j` again given every subset of the neighbours of `i` and of `j`); v-structures, then
//! Meek's rules R1–R3 ([`Pdag::orient_triples`]), give the CPDAG. Conflicting orientations leave an
//! edge undirected and are listed in [`PcResult::conflicts`]; every decision and its votes is in
//! [`PcResult::triples`], the orientation phase's tests in [`PcResult::tests`] with phase
//! "orientation".

use super::ci::{CiOutcome, CiParams, CiTester, IndependenceTest};
use super::data::CausalData;
use super::graph::{Pdag, Triple};
use super::orient::{Decision, Orientation, OrientationTest, classify};
use super::whiten::{Prewhitening, WhiteningRecord, prewhiten};
use crate::CoreError;
use crate::estimator::{Estimator, Params, Progress, Valid};
use crate::hypothesis::check_alpha;
use bke_linalg::Backend;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Settings of the PC algorithm. Defaults: `α = 0.05`, the default [`CiParams`] (KCI), GP
/// pre-whitening when the data have a time index, no limit on the conditioning-set size, the
/// majority orientation rule ([`super::orient`] for why).
#[derive(Debug, Clone, PartialEq)]
pub struct PcParams {
    /// Level of every conditional-independence test, in (0, 1): an edge is removed when `p > α`.
    pub alpha: f64,
    /// The conditional-independence test.
    pub ci: CiParams,
    /// Pre-whitening against the time index (ignored without one).
    pub prewhiten: Prewhitening,
    /// Largest conditioning set tried (`None`: no limit).
    pub max_condition: Option<usize>,
    /// How unshielded triples are classified as colliders ([`super::orient`]).
    pub orientation: Orientation,
}

impl Default for PcParams {
    fn default() -> Self {
        Self {
            alpha: 0.05,
            ci: CiParams::default(),
            prewhiten: Prewhitening::Gp,
            max_condition: None,
            orientation: Orientation::default(),
        }
    }
}

impl Params for PcParams {
    type Error = CoreError;

    fn validate(&self) -> Result<(), CoreError> {
        check_alpha(self.alpha)?;
        self.ci.validate()
    }
}

impl Estimator for PcParams {
    type Data = CausalData;
    type Fitted = PcResult;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &CausalData,
        progress: &dyn Progress,
    ) -> Result<PcResult, CoreError> {
        progress.update("pre-whitening", 0, 1);
        let (values, record) = prewhiten::<B>(data, params.prewhiten, &params.ci.gp)?;
        progress.update("pre-whitening", 1, 1);
        let tester = params.ci.check()?.fit::<B>(&values)?;
        let mut result = pc_oriented::<B>(
            &tester,
            data.names(),
            params.alpha,
            params.max_condition,
            params.orientation,
            progress,
        )?;
        result.prewhitening = record;
        Ok(result)
    }
}

/// One edge of the CPDAG.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PcEdge {
    /// Tail (for an undirected edge, the first of the two in column order).
    pub from: String,
    /// Head.
    pub to: String,
    /// Whether the edge is oriented `from → to` (otherwise `from − to`).
    pub directed: bool,
}

/// One conditional-independence test the algorithm ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestRecord {
    /// First variable.
    pub x: String,
    /// Second variable.
    pub y: String,
    /// The conditioning set.
    pub given: Vec<String>,
    /// Permutation p-value.
    pub p_value: f64,
    /// Lengthscales of the HSIC kernels on the residuals of `x` and of `y`.
    pub lengthscales: Vec<f64>,
    /// The HSIC statistic.
    pub statistic: f64,
    /// Size of the conditioning set (the level of the skeleton search).
    pub level: usize,
    /// Whether `p > α` (in the skeleton phase: the edge was removed with this separating set).
    pub independent: bool,
    /// "skeleton" (the search for separating sets) or "orientation" (the votes of the conservative,
    /// majority and max-p rules, [`super::orient`]).
    #[serde(default = "skeleton_phase")]
    pub phase: String,
}

fn skeleton_phase() -> String {
    "skeleton".into()
}

fn standard_orientation() -> String {
    Orientation::Standard.name().into()
}

/// How the orientation phase classified one unshielded triple `x − via − y`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TripleRecord {
    /// One end.
    pub x: String,
    /// The centre.
    pub via: String,
    /// The other end.
    pub y: String,
    /// "collider" (`x → via ← y`), "non-collider" or "ambiguous".
    pub decision: String,
    /// Separating sets of `x` and `y` (with `p > α`; max-p: the deciding ones) that contain `via`.
    pub sets_with: usize,
    /// Those that do not contain `via`.
    pub sets_without: usize,
}

/// The separating set found for a removed edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeparatingSet {
    /// First variable.
    pub x: String,
    /// Second variable.
    pub y: String,
    /// The set.
    pub given: Vec<String>,
}

/// The result of the PC algorithm: the CPDAG, every test run, and how the data were prepared. This
/// is the JSON of `bke causal pc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PcResult {
    /// The variables, in column order.
    pub nodes: Vec<String>,
    /// The CPDAG's edges.
    pub edges: Vec<PcEdge>,
    /// Every test, in the order of the algorithm (level, then edge, then conditioning set).
    pub tests: Vec<TestRecord>,
    /// The level α of the tests.
    pub alpha: f64,
    /// The kernel selection: "bkl-bayes", "bkl", "hsicagg", "median" or "fixed".
    pub selection: String,
    /// The conditional-independence test that ran: "kci", "rcit" or "gp-hsic".
    #[serde(default)]
    pub ci_test: String,
    /// The pre-whitening applied.
    pub prewhitening: WhiteningRecord,
    /// Separating sets of the removed edges.
    pub separating_sets: Vec<SeparatingSet>,
    /// Edges left undirected because the rules asked for both directions, as `[a, b]`.
    pub conflicts: Vec<[String; 2]>,
    /// The orientation rule: "standard", "conservative", "majority" or "max-p".
    #[serde(default = "standard_orientation")]
    pub orientation: String,
    /// Every unshielded triple of the skeleton and its classification.
    #[serde(default)]
    pub triples: Vec<TripleRecord>,
    /// Observations used (after pre-whitening).
    pub observations: usize,
    /// Permutations per test.
    pub permutations: usize,
}

impl PcResult {
    fn index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n == name)
    }

    /// The CPDAG as a graph over the node indices.
    pub fn graph(&self) -> Pdag {
        let mut g = Pdag::empty(self.nodes.len());
        for e in &self.edges {
            if let (Some(a), Some(b)) = (self.index(&e.from), self.index(&e.to)) {
                if e.directed { g.add_directed(a, b) } else { g.add_undirected(a, b) }
            }
        }
        g
    }

    /// Whether the variables `a` and `b` are joined.
    pub fn adjacent(&self, a: &str, b: &str) -> bool {
        self.edges.iter().any(|e| (e.from == a && e.to == b) || (e.from == b && e.to == a))
    }

    /// Whether the edge `a → b` is in the CPDAG.
    pub fn directed(&self, a: &str, b: &str) -> bool {
        self.edges.iter().any(|e| e.directed && e.from == a && e.to == b)
    }
}

/// One edge's progress through the tests of a level.
struct EdgeJob {
    i: usize,
    j: usize,
    sets: Vec<Vec<usize>>,
    next: usize,
    separated: Option<Vec<usize>>,
}

/// The PC algorithm on a bound test (module docs), with `names` for the columns and the standard
/// orientation rule. Lower level than [`PcParams`]: no pre-whitening (the record says "none");
/// testers made with [`CiTester::with_selection`] share their regressions, so several selections can
/// be compared at the cost of one set of GP fits.
pub fn pc<B: Backend>(
    tester: &CiTester,
    names: &[String],
    alpha: f64,
    max_condition: Option<usize>,
    progress: &dyn Progress,
) -> Result<PcResult, CoreError> {
    pc_oriented::<B>(tester, names, alpha, max_condition, Orientation::Standard, progress)
}

/// [`pc`] with the orientation rule `orientation`. A tester caches its test outcomes, so running
/// several rules on one tester repeats no test.
pub fn pc_oriented<B: Backend>(
    tester: &CiTester,
    names: &[String],
    alpha: f64,
    max_condition: Option<usize>,
    orientation: Orientation,
    progress: &dyn Progress,
) -> Result<PcResult, CoreError> {
    check_alpha(alpha)?;
    let p = tester.variables();
    if names.len() != p {
        return Err(CoreError::DimensionMismatch {
            what: "variable names".into(),
            expected: p,
            found: names.len(),
        });
    }
    let bound = Bound::<B>(tester, std::marker::PhantomData);
    let found = search(&bound, p, alpha, max_condition, orientation, progress)?;
    Ok(assemble(tester, names, alpha, orientation, found))
}

struct Bound<'a, B>(&'a CiTester, std::marker::PhantomData<B>);

impl<B: Backend> IndependenceTest for Bound<'_, B> {
    fn prefetch(&self, keys: &[(usize, Vec<usize>)]) -> Result<(), CoreError> {
        self.0.prefetch::<B>(keys)
    }
    fn test(&self, i: usize, j: usize, s: &[usize]) -> Result<CiOutcome, CoreError> {
        self.0.test::<B>(i, j, s)
    }
}

/// What the search found.
pub(crate) struct Search {
    /// The CPDAG.
    pub cpdag: Pdag,
    /// Edges left undirected by conflicting orientations.
    pub conflicts: Vec<(usize, usize)>,
    /// Separating sets of the removed edges, by `(smaller, larger)`.
    pub sepsets: BTreeMap<(usize, usize), Vec<usize>>,
    /// The skeleton phase's tests.
    pub tests: Vec<Test>,
    /// The classification of every unshielded triple.
    pub triples: Vec<Decision>,
    /// The orientation phase's tests.
    pub orientation_tests: Vec<OrientationTest>,
}

/// The skeleton search and orientation (module docs) over `p` variables.
pub(crate) fn search(
    tester: &impl IndependenceTest,
    p: usize,
    alpha: f64,
    max_condition: Option<usize>,
    orientation: Orientation,
    progress: &dyn Progress,
) -> Result<Search, CoreError> {
    let (g, sepsets, tests) = skeleton(tester, p, alpha, max_condition, progress)?;
    progress.update("PC orientation", 0, 1);
    let (triples, orientation_tests) =
        classify(tester, &g, &sepsets, alpha, orientation, max_condition, progress)?;
    let kinds: BTreeMap<(usize, usize, usize), Triple> =
        triples.iter().map(|d| ((d.i, d.k, d.j), d.kind)).collect();
    let (cpdag, conflicts) = Pdag::orient_triples(&g, |i, k, j| kinds[&(i, k, j)]);
    progress.update("PC orientation", 1, 1);
    Ok(Search { cpdag, conflicts, sepsets, tests, triples, orientation_tests })
}

type Skeleton = (Pdag, BTreeMap<(usize, usize), Vec<usize>>, Vec<Test>);

/// The skeleton phase (module docs): the skeleton, separating sets and tests.
fn skeleton(
    tester: &impl IndependenceTest,
    p: usize,
    alpha: f64,
    max_condition: Option<usize>,
    progress: &dyn Progress,
) -> Result<Skeleton, CoreError> {
    let mut g = Pdag::complete(p);
    let mut sepsets: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
    let mut tests = Vec::new();
    let mut level = 0;
    loop {
        if max_condition.is_some_and(|m| level > m) {
            break;
        }
        let frozen: Vec<Vec<usize>> = (0..p).map(|v| g.neighbours(v)).collect();
        let mut jobs: Vec<EdgeJob> = g
            .edges()
            .into_iter()
            .map(|(a, b, _)| (a.min(b), a.max(b)))
            .map(|(i, j)| EdgeJob {
                i,
                j,
                sets: conditioning_sets(&frozen, i, j, level),
                next: 0,
                separated: None,
            })
            .filter(|e| !e.sets.is_empty())
            .collect();
        if jobs.is_empty() {
            break;
        }
        let total = jobs.len() as u64;
        let stage = format!("PC level {level}");
        progress.update(&stage, 0, total);
        loop {
            progress.checkpoint()?;
            let active: Vec<usize> = (0..jobs.len())
                .filter(|&k| jobs[k].separated.is_none() && jobs[k].next < jobs[k].sets.len())
                .collect();
            if active.is_empty() {
                break;
            }
            let keys: Vec<(usize, Vec<usize>)> = active
                .iter()
                .flat_map(|&k| {
                    let e = &jobs[k];
                    let s = &e.sets[e.next];
                    [(e.i, s.clone()), (e.j, s.clone())]
                })
                .collect();
            tester.prefetch(&keys)?;
            let outcomes = active
                .par_iter()
                .map(|&k| {
                    let e = &jobs[k];
                    tester.test(e.i, e.j, &e.sets[e.next])
                })
                .collect::<Result<Vec<_>, CoreError>>()?;
            for (&k, out) in active.iter().zip(outcomes) {
                let e = &mut jobs[k];
                let s = e.sets[e.next].clone();
                let independent = out.p_value > alpha;
                tests.push((level, e.i, e.j, s.clone(), out, independent));
                e.next += 1;
                if independent {
                    e.separated = Some(s);
                }
            }
            let done = jobs.iter().filter(|e| e.separated.is_some() || e.next == e.sets.len()).count();
            progress.update(&stage, done as u64, total);
        }
        for e in &jobs {
            if let Some(s) = &e.separated {
                g.remove(e.i, e.j);
                sepsets.insert((e.i, e.j), s.clone());
            }
        }
        level += 1;
    }
    Ok((g, sepsets, tests))
}

/// Subsets of size `level` of `a(i) ∖ {j}`, then of `a(j) ∖ {i}` not already listed.
fn conditioning_sets(adj: &[Vec<usize>], i: usize, j: usize, level: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (a, b) in [(i, j), (j, i)] {
        let pool: Vec<usize> = adj[a].iter().copied().filter(|&v| v != b).collect();
        for s in subsets(&pool, level) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// The subsets of `pool` of size `k`, in lexicographic order of positions.
fn subsets(pool: &[usize], k: usize) -> Vec<Vec<usize>> {
    if k > pool.len() {
        return Vec::new();
    }
    let mut idx: Vec<usize> = (0..k).collect();
    let mut out = Vec::new();
    loop {
        out.push(idx.iter().map(|&t| pool[t]).collect());
        let Some(t) = (0..k).rev().find(|&t| idx[t] != t + pool.len() - k) else { break };
        idx[t] += 1;
        for u in t + 1..k {
            idx[u] = idx[u - 1] + 1;
        }
    }
    out
}

/// (level, i, j, conditioning set, outcome, independent).
type Test = (usize, usize, usize, Vec<usize>, CiOutcome, bool);

fn assemble(
    tester: &CiTester,
    names: &[String],
    alpha: f64,
    orientation: Orientation,
    found: Search,
) -> PcResult {
    let Search { cpdag, conflicts, sepsets, tests, triples, orientation_tests } = found;
    let name = |v: usize| names[v].clone();
    let set = |s: &[usize]| s.iter().map(|&v| name(v)).collect::<Vec<_>>();
    let record = |level: usize, i: usize, j: usize, s: &[usize], out: CiOutcome, phase: &str| TestRecord {
        x: name(i),
        y: name(j),
        given: set(s),
        p_value: out.p_value,
        lengthscales: out.lengthscales.to_vec(),
        statistic: out.statistic,
        level,
        independent: out.p_value > alpha,
        phase: phase.into(),
    };
    let mut records: Vec<TestRecord> =
        tests.into_iter().map(|(level, i, j, s, out, _)| record(level, i, j, &s, out, "skeleton")).collect();
    records.extend(
        orientation_tests.into_iter().map(|(i, j, s, out)| record(s.len(), i, j, &s, out, "orientation")),
    );
    PcResult {
        nodes: names.to_vec(),
        edges: cpdag
            .edges()
            .into_iter()
            .map(|(a, b, directed)| PcEdge { from: name(a), to: name(b), directed })
            .collect(),
        tests: records,
        alpha,
        selection: tester.params().selection_name().into(),
        ci_test: tester.method().name().into(),
        prewhitening: WhiteningRecord {
            method: "none".into(),
            rows: tester.observations(),
            note: Some("the data were used as given".into()),
            variables: Vec::new(),
        },
        separating_sets: sepsets
            .iter()
            .map(|(&(i, j), s)| SeparatingSet { x: name(i), y: name(j), given: set(s) })
            .collect(),
        conflicts: conflicts.iter().map(|&(a, b)| [name(a), name(b)]).collect(),
        orientation: orientation.name().into(),
        triples: triples
            .iter()
            .map(|d| TripleRecord {
                x: name(d.i),
                via: name(d.k),
                y: name(d.j),
                decision: match d.kind {
                    Triple::Collider => "collider",
                    Triple::NonCollider => "non-collider",
                    Triple::Ambiguous => "ambiguous",
                }
                .into(),
                sets_with: d.with,
                sets_without: d.without,
            })
            .collect(),
        observations: tester.observations(),
        permutations: tester.params().hsic.permutations,
    }
}

#[cfg(test)]
mod tests;
